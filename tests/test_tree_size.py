"""The tracked tree stays small enough to travel: at most 56 MiB.

A lent GPU machine receives a copy of the working tree with a cap of 64 MiB on everything that travels (the tree
plus what a check carries, a virtual environment or a build folder); 56 MiB for the tracked files leaves the rest
for that. The committed weights are most of it (about 49 MB of the 54 MB, shipped packed:
:mod:`stereoprobe.packed`), so a new model, an unpacked part or a data file that would break the cap fails here,
with the largest files named.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 56 * 2**20  # 58,720,256 bytes


def _tracked_sizes() -> dict[str, int]:
    """Size of every tracked file (``git ls-files``) in the working tree (one deleted, not yet committed: absent)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    sizes = {}
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        path = ROOT / name
        if name and path.is_file() and not path.is_symlink():
            sizes[name] = path.stat().st_size
    return sizes


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout (an sdist or installed copy): no tree")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: cannot list the tracked files")
def test_the_tracked_tree_is_at_most_56_mib():
    sizes = _tracked_sizes()
    total = sum(sizes.values())
    largest = ", ".join(f"{name} {size / 2**20:.2f} MiB" for name, size in
                        sorted(sizes.items(), key=lambda kv: -kv[1])[:8])
    assert len(sizes) > 100, f"only {len(sizes)} tracked files found"
    assert total <= LIMIT, (f"the tracked tree is {total:,} bytes ({total / 2**20:.2f} MiB), over {LIMIT / 2**20:.0f} "
                            f"MiB; the largest files: {largest}")


def test_a_packed_file_reads_back_bit_for_bit(tmp_path):
    from stereoprobe import packed

    blob = bytes(range(256)) * 40 + b"\x01\x02\x03"  # not a whole number of 4-byte words
    plain = tmp_path / "w.safetensors"
    plain.write_bytes(blob)
    digest = packed.sha256(plain)
    stored = packed.pack_file(plain)
    assert stored == packed.packed_path(plain) and not plain.exists() and stored.stat().st_size < len(blob)
    assert packed.exists(plain) and packed.read_bytes(plain) == blob and packed.sha256(plain) == digest
    stored.write_bytes(stored.read_bytes()[:-8] + bytes(8))  # damaged: its digest matches no card
    assert packed.sha256(plain) != digest
