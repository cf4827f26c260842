"""pytest plugin for the compatibility runners: `--skip-list FILE` (may be given more than once)
marks every collected test whose node id starts with an entry of a FILE (`<node id prefix> <reason>` per line) as skipped
with that reason, so a skipped test still appears in the report, with why."""
import pytest

from report import read_list


def pytest_addoption(parser):
    parser.addoption("--skip-list", action="append", default=[],
                     help="file of `<node id prefix> <reason>` lines")


def pytest_collection_modifyitems(config, items):
    skips = {}
    for path in config.getoption("--skip-list"):
        skips.update(read_list(path))
    for item in items:
        for prefix, reason in skips.items():
            if item.nodeid.startswith(prefix):
                item.add_marker(pytest.mark.skip(reason=reason))
                break
