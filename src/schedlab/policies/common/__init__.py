"""What the policy families share: the placers and the queue schedulers they are built from."""
