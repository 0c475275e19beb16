"""`python runtime/apply_fix.py`: applies the proposed fix (fix.patch, a diff against the
installed gptme, its paths as in gptme's repository: `gptme/server/...`) to the gptme this Python
imports, with `patch -p1` (or `git apply`). `pip install --force-reinstall --no-deps
--require-hashes -r requirements.txt` restores the release.

`patched()` is how the test knows: a file the fix names differs from what the installed
package's RECORD says it installed.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fix.patch"


def site() -> Path:
    """The directory gptme is installed in (the parent of its package)."""
    spec = importlib.util.find_spec("gptme")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gptme is not installed in this Python (pip install -r requirements.txt first)")
    return Path(list(spec.submodule_search_locations)[0]).parent


def named() -> list[str]:
    """The files fix.patch changes, relative to the installed package's directory."""
    text = FIX.read_text(encoding="utf-8")
    return sorted({m.group(1) for m in re.finditer(r"^\+\+\+ b/(\S+)", text, re.M)})


def patched() -> bool:
    """A file fix.patch names is not as the release installed it."""
    if not FIX.exists():
        return False
    record = {}
    for f in distribution("gptme").files or []:
        if f.hash is not None:
            record[str(f).replace("\\", "/")] = f.hash.value
    base = site()
    for rel in named():
        path = base / rel
        if not path.exists():
            return True
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=")
        if record.get(rel) != digest.decode():
            return True
    return False


def main() -> None:
    if not FIX.exists():
        sys.exit("this reproducer carries no fix.patch")
    if patched():
        print("the fix is already applied (pip install --force-reinstall ... restores the release)")
        return
    base = site()
    if shutil.which("patch"):
        cmd = ["patch", "-p1", "--forward", "--batch", "-d", str(base), "-i", str(FIX)]
    elif shutil.which("git"):
        cmd = ["git", "apply", "-p1", f"--directory={base}", "--unsafe-paths", str(FIX)]
    else:
        sys.exit("applying fix.patch needs `patch` or `git`")
    r = subprocess.run(cmd, check=False)
    if r.returncode != 0:
        sys.exit(f"applying fix.patch failed (exit {r.returncode})")
    print(f"applied fix.patch to gptme ({', '.join(named())})")


if __name__ == "__main__":
    main()
