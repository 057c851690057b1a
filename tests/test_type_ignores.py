"""Every ``# type: ignore`` in the package names its error code and says why, on the same line."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "schedlab"
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[a-z, -]+\])?(?P<rest>.*)$")


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    bare = []
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            match = IGNORE.search(line)
            if match and not (match["code"] and re.match(r"\s*#\s*\S", match["rest"])):
                bare.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not bare, "\n".join(bare)
