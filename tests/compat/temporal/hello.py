"""Workflows and activities as Temporal's samples write them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow


@dataclass
class Greeting:
    greeting: str
    name: str


@activity.defn
async def compose_greeting(input: Greeting) -> str:
    return f"{input.greeting}, {input.name}!"


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            compose_greeting,
            Greeting("Hello", name),
            start_to_close_timeout=timedelta(seconds=10),
        )
