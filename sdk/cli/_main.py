"""The root of the command tree, and how errors end a command: one line, the right exit code."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from importlib import metadata

import click

from flowforge.cli.access import apikey, audit, token_key
from flowforge.cli.batch import batch
from flowforge.cli.breaker import breaker
from flowforge.cli.config import config
from flowforge.cli.dag import dag
from flowforge.cli.dlq import dlq
from flowforge.cli.limit import limit
from flowforge.cli.namespace import namespace
from flowforge.cli.remediation import activity, pause, reset, unpause
from flowforge.cli.schedule import schedule
from flowforge.cli.search_attribute import search_attribute
from flowforge.cli.server import server
from flowforge.cli.task_queue import task_queue
from flowforge.cli.trigger import event, trigger
from flowforge.cli.workflow import workflow

__all__ = ["cli", "main"]

# Exit codes: 1 the server or the operation failed, 2 the command line was wrong (click's usage code).
_FAILED = 1
_BAD_INPUT = 2
_INTERRUPTED = 130


def _version() -> str:
    try:
        return metadata.version("flowforge")
    except metadata.PackageNotFoundError:
        return "unknown"


class _State:
    """What the root options said, read when an error is reported after the command has unwound."""

    debug = False


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    _State.debug = _State.debug or value
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(_version(), "--version", "-V", prog_name="flowforge", message="%(prog)s %(version)s")
@click.option(
    "--debug",
    is_flag=True,
    envvar="FLOWFORGE_DEBUG",
    is_eager=True,
    expose_value=False,
    callback=_set_debug,
    help="show the traceback of an unexpected error [env FLOWFORGE_DEBUG]",
)
def cli() -> None:
    """FlowForge: durable workflows for Python.

    Client commands take --address, --namespace, --api-key and the TLS flags after the
    subcommand; each also comes from FLOWFORGE_* variables or a profile of the config
    file (`flowforge config --help`). Shell completion: `flowforge completion bash|zsh|fish`.
    """


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script (use: eval "$(flowforge completion bash)")."""
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # the three choices are click's built-in shells
    click.echo(completer(cli, {}, "flowforge", "_FLOWFORGE_COMPLETE").source())


for _group in (
    server,
    workflow,
    dag,
    schedule,
    task_queue,
    dlq,
    limit,
    breaker,
    batch,
    activity,
    trigger,
    event,
    search_attribute,
    namespace,
    apikey,
    audit,
    token_key,
    config,
):
    cli.add_command(_group)
for _command in (reset, pause, unpause):
    workflow.add_command(_command)


def _error(message: str) -> None:
    click.echo(f"error: {message}", err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the process exit code.

    Bad input ends with one line naming the flag and exit code 2; a server's refusal with
    one line carrying its gRPC status and exit code 1; never a traceback unless ``--debug``.
    """
    from flowforge.envconfig import ConfigError
    from flowforge.exceptions import RPCError

    _State.debug = False
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="flowforge", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.format_message())  # a group given no command: its help, as temporal prints it
        return 0
    except click.UsageError as error:
        hint = f" (see {error.ctx.command_path} --help)" if error.ctx is not None else ""
        _error(f"{error.format_message()}{hint}")
        return _BAD_INPUT
    except click.ClickException as error:
        _error(error.format_message())
        return error.exit_code
    except ConfigError as error:
        _error(f"config: {error}")
        return _BAD_INPUT
    except RPCError as error:
        _error(str(error))
        return _FAILED
    except (KeyboardInterrupt, click.Abort):
        return _INTERRUPTED
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else _FAILED
    except Exception as error:
        if _State.debug:
            traceback.print_exc()
        else:
            _error(f"{type(error).__name__}: {error} (--debug shows the traceback)")
        return _FAILED
    return result if isinstance(result, int) else 0
