"""``flowforge dag ...``: declarative DAG definitions (docs/dags.md)."""

from __future__ import annotations

from pathlib import Path

import click

from flowforge.dag import DagValidationError, load_dag

__all__ = ["dag"]


@click.group()
def dag() -> None:
    """Validate, publish and run declarative DAGs."""


@dag.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate(file: Path) -> None:
    """Check a JSON or YAML definition locally (no server): print every violation with its path.

    Exits 1 when the definition is invalid, one violation a line; prints its digest when valid.
    """
    try:
        spec = load_dag(file)
    except DagValidationError as error:
        for violation in error.violations:
            click.echo(str(violation))
        count = len(error.violations)
        raise click.ClickException(f"{file}: {count} violation{'s' if count != 1 else ''}") from None
    click.echo(f"{file}: valid DAG {spec.name!r}, {len(spec.tasks)} tasks, version {spec.digest}")
