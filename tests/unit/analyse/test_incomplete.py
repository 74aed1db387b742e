"""A failure names only its own attempt's evidence (issue 26, item 6): a failed/ folder left by an earlier
attempt is not shown as if it explained a job that failed before its session kept anything."""

from __future__ import annotations

import os
import time

from specsweep.analyse.incomplete import configuration_status
from specsweep.plan.config import Configuration

CONFIGURATION = Configuration(name="a", engine="llama", kind="llamacpp", baseline=False, args={}, env={})


def test_an_earlier_attempts_failed_folder_is_named_as_earlier_not_as_this_failure(tmp_path):
    earlier = tmp_path / "a" / "failed" / "20261201T100000Z-job13"
    earlier.mkdir(parents=True)
    (earlier / "error.txt").write_text("node node1 failed")
    an_hour_ago = time.time() - 3600
    os.utime(earlier / "error.txt", (an_hour_ago, an_hour_ago))
    this_run = time.time() - 60
    status = configuration_status(CONFIGURATION, 1, tmp_path, {}, since=this_run)[0]
    assert (
        status == f"failed before its session kept anything (the newest evidence, {earlier}, is an earlier attempt's)"
    )
    # evidence this run wrote is this failure's
    (tmp_path / "a" / "failed" / "20261201T110000Z-job14").mkdir()
    (tmp_path / "a" / "failed" / "20261201T110000Z-job14" / "error.txt").write_text("received SIGTERM")
    status = configuration_status(CONFIGURATION, 1, tmp_path, {}, since=this_run)[0]
    assert status == f"failed ({tmp_path / 'a' / 'failed' / '20261201T110000Z-job14'})"
