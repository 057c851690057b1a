"""The GFS paper's baselines for high-priority and spot jobs (ASPLOS '26 §4.1): YARN-CS with
preemption, Chronus, Lyra and FGD, and the shared spot FCFS scheduler they build on."""
