"""Testing workflows and activities.

- :class:`Replayer` replays recorded histories against the current code. A
  replay test guards a deploy: record a history (``handle.fetch_history()`` or
  ``flowforge workflow show --output json``), keep it with the tests, and replay
  it whenever the workflow changes::

      await Replayer(workflows=[Onboarding]).replay_workflow(history)

  If the changed code would not produce the commands the history recorded, the
  replay raises ``NonDeterminismError`` naming the first mismatch.
  :func:`replay_histories_in` turns a folder of such files into a pytest test.
- :class:`ActivityEnvironment` runs one activity function with
  ``activity.info()``, heartbeats and cancellation, without a server or worker.
- :class:`WorkflowEnvironment` runs a real server in the test's process on a
  temporary SQLite file, with a connected client; the time-skipping variant
  jumps over timers whenever nothing else can progress::

      async with WorkflowEnvironment.start_time_skipping() as env:
          async with Worker(env.client, task_queue="q", workflows=[Reminder]):
              handle = await env.client.start_workflow(Reminder.run, id="r", task_queue="q")
              await handle.result()       # a 30-day workflow.sleep takes milliseconds
"""

from __future__ import annotations

from flowforge._activity_environment import ActivityEnvironment
from flowforge._replayer import Replayer, WorkflowReplayResult, WorkflowReplayResults, replay_histories_in
from flowforge._workflow_environment import WorkflowEnvironment

__all__ = [
    "ActivityEnvironment",
    "Replayer",
    "WorkflowEnvironment",
    "WorkflowReplayResult",
    "WorkflowReplayResults",
    "replay_histories_in",
]
