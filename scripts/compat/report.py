"""What every compatibility-suite runner reports, in one shape: one line per failed test as it is
known, a final `<suite>: N passed, M failed (K skipped)` line, and target/compat/<name>.json:

    {"suite", "version", "mode", "engine", "samsa": {"commit", "date"}, "tests": [{"id", "name",
     "state", "duration_s", "reason", ...}], "passed", "failed", "skipped"}

`state` is PASSED, FAILED or SKIPPED; scripts/compat/matrix.py reads these files."""
import datetime
import json
import os
import subprocess
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.path.join(ROOT, "target", "compat")


def read_list(path):
    """A list file: `<test> <reason>` per line; blank lines and # comments ignored."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            tid, _, reason = line.partition(" ")
            out[tid] = reason.strip()
    return out


def samsa_build():
    """The Samsa source a run tested: the commit (with -dirty for uncommitted changes) and date."""
    def git(*args):
        try:
            return subprocess.run(["git", "-C", ROOT] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True).stdout.strip()
        except OSError:
            return ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    return {"commit": commit, "date": datetime.date.today().isoformat()}


class Summary:
    def __init__(self, suite, version, mode):
        self.data = {"suite": suite, "version": version, "mode": mode,
                     "engine": os.environ.get("SAMSA_IO_ENGINE", "auto"), "samsa": samsa_build(),
                     "tests": []}
        self.passed = self.failed = self.skipped = 0

    def add(self, test_id, name, state, duration_s=0.0, reason="", **extra):
        entry = {"id": test_id, "name": name, "state": state, "duration_s": round(duration_s, 3),
                 "reason": reason}
        entry.update(extra)
        self.data["tests"].append(entry)
        if state == "PASSED":
            self.passed += 1
        elif state == "SKIPPED":
            self.skipped += 1
        else:
            self.failed += 1
            where = "  [log: %s]" % extra["log"] if extra.get("log") else ""
            print("FAILED %s: %s%s" % (name, " ".join(reason.split())[:300], where), flush=True)

    def finish(self, file_stem):
        """Writes the JSON report, prints the final line; returns the exit status."""
        self.data.update({"passed": self.passed, "failed": self.failed, "skipped": self.skipped})
        os.makedirs(OUT_DIR, exist_ok=True)
        path = os.path.join(OUT_DIR, file_stem + ".json")
        with open(path, "w") as f:
            json.dump(self.data, f, indent=1)
        print("%s: %d passed, %d failed (%d skipped)" % (self.data["suite"], self.passed, self.failed,
                                                         self.skipped), flush=True)
        return 1 if self.failed else 0


def junit_results(path):
    """(test id, state, duration, reason) for each testcase of pytest's JUnit XML report (xunit1
    family); the id is the node id as pytest prints it (`file::Class::name`)."""
    root = ET.parse(path).getroot()
    out = []
    for tc in root.iter("testcase"):
        # pytest's xunit1 family: file="test/x/test_a.py", classname="test.x.test_a[.Class]"
        file = tc.get("file") or ""
        classname = tc.get("classname") or ""
        module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
        cls = classname[len(module) + 1:] if module and classname.startswith(module + ".") else ""
        test_id = "::".join(x for x in (file, cls, tc.get("name") or "") if x)
        state, reason = "PASSED", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                state = "FAILED"
                text = (child.text or "").strip().splitlines()
                reason = child.get("message") or (text[-1] if text else "")
                break
            if child.tag == "skipped":
                state = "SKIPPED"
                reason = child.get("message") or ""
        out.append((test_id, state, float(tc.get("time") or 0), reason or ""))
    return out
