"""What a workflow task costs the SDK worker in CPU: the activations alone, no server.

    python -m benchmarks.replay [-n 300] [--repeat 5]

Replays two recorded-shape histories through ``WorkflowInstance`` as a sticky worker
does, and reports CPU µs (this thread's; the least of ``--repeat`` rounds of ``-n``
workflows, since other work on the machine only adds) per workflow task:

- ``first_task``: a new instance activated with events 1-3 (the first workflow task
  of a run: a new instance, the run method starts, the first commands);
- ``cached_task``: each later workflow task on the cached instance, given only the
  events after its last one (steady state on a sticky worker);
- ``full_replay``: a new instance given the whole history up to the last task
  (a cache miss, or the Replayer), per workflow task replayed;
- ``calls_per_task``: the calls the determinism guard's hook sees per workflow task
  of the whole run (first + cached tasks), counted by a hook of the same kind in its place.

Each figure is given with the guard (``*_us``) and without (``*_unguarded_us``).
The workflows are ``SingleActivity`` (one activity: 2 workflow tasks) and the
onboarding DAG (6 activities, 3 parallel: 6 workflow tasks), with histories written as
the server writes them (testsupport/activations.py). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from benchmarks.determinism_guard import guard_disabled
from benchmarks.onboarding import code_version, load_average, machine, positive_int
from testsupport.activations import Run, calls_per_task, onboarding_run, one_activity_run


def _cpu_us_per_task(run_one: Callable[[], int], count: int) -> float:
    """CPU µs per workflow task of ``count`` calls of ``run_one`` (which returns the tasks it ran)."""
    tasks = 0
    started = time.thread_time()
    for _ in range(count):
        tasks += run_one()
    return (time.thread_time() - started) / tasks * 1e6


def _measure(scenario: Run, count: int) -> dict[str, float]:
    first = _cpu_us_per_task(scenario.first_task, count)
    whole = _cpu_us_per_task(scenario.whole_run, count)
    tasks = len(scenario.slices)
    return {
        "first_task_us": first,
        # The whole run minus its first task, per later task.
        "cached_task_us": (whole * tasks - first) / (tasks - 1),
        "full_replay_us": _cpu_us_per_task(scenario.full_replay, count),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--workflows", type=positive_int, default=300, help="workflows per round")
    parser.add_argument("--repeat", type=positive_int, default=5, help="rounds; the least is reported")
    options = parser.parse_args()
    scenarios = {"one_activity": one_activity_run(), "onboarding": onboarding_run()}
    result: dict[str, Any] = {"commit": code_version()}
    for name, scenario in scenarios.items():
        rounds = []
        for _ in range(options.repeat):
            figures = _measure(scenario, options.workflows)
            with guard_disabled():
                figures |= {
                    f"{key[:-3]}_unguarded_us": value for key, value in _measure(scenario, options.workflows).items()
                }
            rounds.append(figures)
        result[name] = {key: round(min(r[key] for r in rounds), 1) for key in rounds[0]}
        result[name]["workflow_tasks"] = len(scenario.slices)
        result[name]["calls_per_task"] = round(calls_per_task(scenario), 1)
    result.update(machine=machine(), load_average=load_average(), workflows=options.workflows, repeat=options.repeat)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
