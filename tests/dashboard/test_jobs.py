"""The background jobs' fork: a job keeps its garbage collector off what it inherits."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from dashboard.shell.jobs import create_manager, stop_jobs


def test_a_forked_job_collects_none_of_the_objects_it_inherits(tmp_path: Path) -> None:
    create_manager(tmp_path)
    create_manager(tmp_path / "again")  # a second app in the process: one hook still
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the job's side: report how many objects it keeps out of collections
        os.write(write, str(gc.get_freeze_count()).encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    frozen_in_child = int(os.read(read, 64))
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert frozen_in_child > 1000  # every object the server had, not a few
    assert gc.get_freeze_count() == 0  # the server collects its own again


def test_the_jobs_still_running_are_stopped_when_the_server_exits() -> None:
    import time

    import multiprocess

    stuck = multiprocess.Process(target=time.sleep, args=(600,))  # as a job on a held lock
    stuck.start()
    stop_jobs()
    assert not stuck.is_alive()
    assert stuck not in multiprocess.active_children()
