"""flowforge.dag without a server: every violation kind with its path, cycles (property-based),
expressions, and the canonical form's digest."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from flowforge.dag import (
    MAX_TASKS,
    DagValidationError,
    ExpressionError,
    evaluate,
    find_cycles,
    load_dag,
    parse_dag,
    schema,
    validate_document,
)

SAMPLE = Path(__file__).parents[2] / "samples" / "dag_onboarding" / "onboarding.dag.yaml"


def _task(task_id: str, *deps: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "activity": "Act", "depends_on": list(deps), "start_to_close_timeout": "10s", **extra}


def _doc(*tasks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "d", "tasks": list(tasks), **extra}


def _violations(document: Any) -> list[str]:
    return [str(v) for v in validate_document(document)]


def test_the_sample_is_valid_and_the_shipped_schema_is_a_valid_json_schema() -> None:
    jsonschema.validators.validator_for(schema()).check_schema(schema())
    spec = load_dag(SAMPLE)
    assert [t.id for t in spec.tasks if not t.depends_on] == ["create_customer"]
    assert spec.task("enrich_customer").depends_on == ("fetch_credit_file", "score_risk", "verify_identity")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"tasks": []}, ["$: 'name' is a required property", "$.tasks: [] should be non-empty"]),
        (_doc(_task("a"), unknown=1), ["$: Additional properties are not allowed ('unknown' was unexpected)"]),
        (
            _doc(_task("a", start_to_close_timeout="ten")),
            ["$.tasks[0].start_to_close_timeout: 'ten' is not a duration"],
        ),
        (_doc(_task("1a")), ["$.tasks[0].id: '1a' does not match"]),
        (_doc(_task("a", retry_policy={"maximum_attempts": -1})), ["$.tasks[0].retry_policy.maximum_attempts: -1"]),
        (_doc(_task("a"), _task("a")), ["$.tasks[1].id: duplicate task id 'a' (first at $.tasks[0])"]),
        (_doc(_task("a", "ghost")), ["$.tasks[0].depends_on[0]: unknown task 'ghost'"]),
        (_doc(_task("a", "a")), ["$.tasks[0].depends_on[0]: task 'a' depends on itself"]),
        (_doc(_task("a", "b"), _task("b", "a")), ["$.tasks[0].depends_on: cycle: a -> b -> a"]),
        (
            _doc(_task("a", "c"), _task("b", "a"), _task("c", "b")),
            ["$.tasks[0].depends_on: cycle: a -> b -> c -> a"],
        ),
        (_doc(_task("a", input="$.nope")), ["$.tasks[0].input: '$.nope' is not an expression"]),
        (_doc(_task("a", input={"x": ["$x"]})), ["$.tasks[0].input.x[0]: '$x' is not an expression"]),
        (_doc(_task("a", input="$.tasks.zz.output")), ["$.tasks[0].input: references unknown task 'zz'"]),
        (
            _doc(_task("a"), _task("b", input="$.tasks.a.output")),
            ["$.tasks[1].input: task 'b' reads the output of 'a', which it does not depend on"],
        ),
        (_doc(_task("a"), output={"r": "$.tasks.q.output.x"}), ["$.output.r: references unknown task 'q'"]),
        (
            _doc({"id": "a", "activity": "A"}),
            ["$.tasks[0]: task 'a' needs start_to_close_timeout or schedule_to_close_timeout"],
        ),
        (
            _doc(*[_task(f"t{i}") for i in range(MAX_TASKS + 1)]),
            [f"$.tasks: {MAX_TASKS + 1} tasks, more than the limit"],
        ),
        ("just text", ["$: 'just text' is not of type 'object'"]),
    ],
)
def test_each_violation_kind_is_reported_with_its_path(document: Any, expected: list[str]) -> None:
    found = _violations(document)
    for needle in expected:
        assert any(v.startswith(needle) for v in found), f"{needle!r} not in {found}"
    assert len(found) == len(expected), found


def test_every_violation_is_reported_at_once() -> None:
    document = _doc(
        _task("a", "c", "ghost", input="$.tasks.lonely.output"),
        _task("b", "a"),
        _task("c", "b"),
        _task("lonely", start_to_close_timeout="soon"),
        _task("lonely"),
        output="$bad",
        extra=True,
    )
    with pytest.raises(DagValidationError) as raised:
        parse_dag(document)
    assert [v.path for v in raised.value.violations] == [
        "$",
        "$.tasks[3].start_to_close_timeout",
        "$.tasks[4].id",
        "$.tasks[0].depends_on[1]",
        "$.tasks[0].depends_on",
        "$.tasks[0].input",
        "$.output",
    ]
    assert "7 violations" in str(raised.value)


def test_yaml_values_json_cannot_hold_are_violations() -> None:
    document = yaml.safe_load("name: d\ntasks:\n- {id: a, activity: A, start_to_close_timeout: 1s, input: 2024-01-01}")
    assert any(v.startswith("$.tasks[0].input: date value 2024-01-01 is not JSON") for v in _violations(document))
    assert any("key 1 is not a string" in v for v in _violations({"name": "d", "tasks": [_task("a")], 1: 2}))


def test_unparsable_and_oversized_text_is_one_violation() -> None:
    with pytest.raises(DagValidationError, match=r"\$: neither JSON nor YAML"):
        parse_dag("name: [unclosed")
    with pytest.raises(DagValidationError, match="more than the limit"):
        parse_dag("#" * (1024 * 1024 + 1))


def test_expressions_evaluate_references_literals_and_escapes() -> None:
    outputs = {"a": {"id": 7, "items": [1, 2]}}
    expression = {"in": "$.input.name", "id": "$.tasks.a.output.id", "second": "$.tasks.a.output.items.1"}
    expression |= {"all": ["$.tasks.a.output", 3, None], "dollar": "$$5", "plain": "x$"}
    assert evaluate(expression, {"name": "ada"}, outputs) == {
        "in": "ada",
        "id": 7,
        "second": 2,
        "all": [{"id": 7, "items": [1, 2]}, 3, None],
        "dollar": "$5",
        "plain": "x$",
    }
    with pytest.raises(ExpressionError, match="has no 'missing'"):
        evaluate("$.input.missing", {}, outputs)
    with pytest.raises(ExpressionError, match="task 'b' has no output yet"):
        evaluate("$.tasks.b.output", None, outputs)


def test_the_same_content_however_formatted_gives_the_same_digest() -> None:
    spec = load_dag(SAMPLE)
    document = yaml.safe_load(SAMPLE.read_text())
    shuffled = dict(reversed(list(document.items())))
    shuffled["tasks"] = [dict(reversed(list(t.items()))) for t in reversed(document["tasks"])]
    for task in shuffled["tasks"]:
        task["depends_on"] = list(reversed(task.get("depends_on", [])))
        task["start_to_close_timeout"] = 30  # "30s" as a number of seconds
    as_json = json.dumps(shuffled, indent=4)
    assert parse_dag(as_json).digest == spec.digest == parse_dag(yaml.safe_dump(shuffled)).digest
    assert parse_dag(spec.canonical_json()).digest == spec.digest  # the canonical form is a valid definition
    changed = dict(document, description="another")
    assert parse_dag(changed).digest != spec.digest


def test_the_cli_validates_locally_and_lists_every_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_doc(_task("a", "b"), _task("b", "a"), _task("c", "nobody"))))
    command = [sys.executable, "-m", "flowforge.cli", "dag", "validate"]
    invalid = subprocess.run([*command, str(bad)], capture_output=True, text=True, timeout=60)
    assert invalid.returncode == 1
    assert invalid.stdout.splitlines() == [
        "$.tasks[2].depends_on[0]: unknown task 'nobody'",
        "$.tasks[0].depends_on: cycle: a -> b -> a",
    ]
    assert invalid.stderr == f"error: {bad}: 2 violations\n"
    valid = subprocess.run([*command, str(SAMPLE)], capture_output=True, text=True, timeout=60)
    assert valid.returncode == 0 and f"version {load_dag(SAMPLE).digest}" in valid.stdout


@st.composite
def _dags_with_a_cycle(draw: st.DrawFn) -> tuple[dict[str, list[str]], list[str]]:
    """A random DAG (edges only from lower to higher index), then a back edge that closes a path."""
    size = draw(st.integers(min_value=2, max_value=40))
    ids = [f"t{i}" for i in draw(st.permutations(range(size)))]
    rng = random.Random(draw(st.integers(0, 2**32)))
    deps = {ids[i]: sorted({ids[j] for j in range(i) if rng.random() < 0.2}) for i in range(size)}
    # A path ids[a] -> ... -> ids[b] made explicit, then ids[a] depends on ids[b]: a cycle.
    a, b = sorted(draw(st.lists(st.integers(0, size - 1), min_size=2, max_size=2, unique=True)))
    path = [a, *sorted(draw(st.sets(st.integers(a + 1, b - 1), max_size=4))), b] if b > a + 1 else [a, b]
    for before, after in itertools.pairwise(path):
        deps[ids[after]] = sorted({*deps[ids[after]], ids[before]})
    deps[ids[a]] = sorted({*deps[ids[a]], ids[b]})
    return deps, [ids[i] for i in path]


@settings(max_examples=150, deadline=None)
@given(_dags_with_a_cycle())
def test_an_injected_cycle_is_always_caught_and_every_reported_cycle_is_real(
    case: tuple[dict[str, list[str]], list[str]],
) -> None:
    deps, _ = case
    document = _doc(*[_task(task_id, *task_deps) for task_id, task_deps in deps.items()])
    cycles = [str(v) for v in validate_document(document) if "cycle: " in v.message]
    assert cycles, "the injected cycle was not reported"
    for line in cycles:
        loop = line.split("cycle: ")[1].split(" -> ")
        assert loop[0] == loop[-1] and len(set(loop[:-1])) == len(loop) - 1
        for before, after in itertools.pairwise(loop):
            assert before in deps[after], f"{before} -> {after} is not an edge of {line}"


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**32))
def test_an_acyclic_dag_has_no_cycle(size: int, seed: int) -> None:
    rng = random.Random(seed)
    ids = [f"t{i}" for i in range(size)]
    rng.shuffle(ids)
    deps = {ids[i]: tuple(ids[j] for j in range(i) if rng.random() < 0.3) for i in range(size)}
    assert find_cycles(deps) == []
    assert validate_document(_doc(*[_task(t, *d) for t, d in deps.items()])) == []


def test_docs_dags_md_publishes_the_shipped_schema_and_the_sample() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "dags.md").read_text()
    block = docs.split("## The JSON Schema", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == schema()
    assert SAMPLE.read_text().strip() in docs


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.booleans())
def test_any_reordering_and_respelling_keeps_the_digest(seed: int, as_yaml: bool) -> None:
    """Task order, key order, depends_on order and how durations are written change nothing."""
    rng = random.Random(seed)
    document = yaml.safe_load(SAMPLE.read_text())
    shuffled: dict[str, Any] = dict(rng.sample(list(document.items()), len(document)))
    tasks = []
    for task in rng.sample(document["tasks"], len(document["tasks"])):
        task = dict(rng.sample(list(task.items()), len(task)))
        task["depends_on"] = rng.sample(task.get("depends_on", []), len(task.get("depends_on", [])))
        task["start_to_close_timeout"] = rng.choice(["30s", 30, 30.0, "30000ms", "0.5m"])
        tasks.append(task)
    shuffled["tasks"] = tasks
    text = yaml.safe_dump(shuffled, sort_keys=False) if as_yaml else json.dumps(shuffled, indent=rng.randint(0, 4))
    assert parse_dag(text).digest == load_dag(SAMPLE).digest
