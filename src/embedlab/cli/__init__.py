"""The ``embedlab`` command: argument parsing and the walk of each command.

Each command is one walk: source -> measurement -> renderer. Nothing is
computed here. Heavy libraries (NumPy, PyTorch, matplotlib) are imported inside
the command that needs them, so ``embedlab report`` on the seed table runs on a
bare Python. ``main`` is the one place that turns the library's exceptions into
one line on stderr and exit code 1 (argparse uses 2 for usage errors).

Everything printed passes through ``report.formats.terminal_text``: a token, a tensor
name, a metadata value or a path can hold control characters that would act on the
terminal. Only the progress bars (tqdm, on stderr) write their own ``\r``.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import select
import sys
from typing import IO, Sequence

from .. import __version__
from ..report.formats import terminal_text
from . import audit, compress, diff, export, inputs, params, plot, projector, report, search
from .errors import USER_ERRORS, message, option_spellings

__all__ = ["main", "build_parser"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 success, 1 error, 2 usage, 130 interrupted)."""
    args = None
    try:
        args = parse(argv)
        return args.run(args)
    except KeyboardInterrupt:  # Ctrl-C, in a heavy import or a long search alike: no traceback
        print(terminal_text(f"{_command_name(args)}: interrupted"), file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_gone():  # the reader left (`| head`): it read what it wanted
            return 0
        if os.environ.get("EMBEDLAB_DEBUG"):
            raise
        # One line, whatever the message quotes from a file: its newlines are shown as \n too.
        print(terminal_text(f"{_command_name(args)}: error: {message(exc, args)}", newlines=False),
              file=sys.stderr)
        return 1


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has left (``embedlab ... | head``); then stdout is pointed at
    /dev/null, so Python's last flush on its way out raises no second error. Another broken pipe (a
    cluster's connection) is an error as any other."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poller.poll(0))  # a pipe without reader: POLLERR
    except (AttributeError, OSError, ValueError):  # no poll here, or stdout is not a file
        return False
    if gone:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return gone


def _command_name(args: argparse.Namespace | None) -> str:
    """``embedlab report``, or ``embedlab plot scale``: the command as typed, for the start of a message;
    ``embedlab`` alone where parsing itself failed (a type function out of memory) and there are no arguments."""
    command = getattr(args, "command", None)
    if command is None:
        return "embedlab"
    figure = getattr(args, "figure", None)
    return f"embedlab {command}" if figure is None else f"embedlab {command} {figure}"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed arguments; a usage error (exit 2) prints the usage of the (sub)command it is in.

    argparse hands an unknown option after a subcommand up to the top-level parser, whose
    usage ("embedlab [-h] COMMAND") does not say what the subcommand takes.
    """
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        args.usage_error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for the report's run record
    return args


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = Parser(
        prog="embedlab",
        description="See and measure token embeddings, positions and the tied output head.",
        epilog="Example: embedlab report --model minilm --probe king --out out/minilm",
    )
    parser.add_argument("--version", action="version", version=f"embedlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    for command in sub.choices.values():  # a figure of plot sets its own, which wins
        command.set_defaults(usage_error=command.error, flags=option_spellings(command))
    return parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose every message (help, usage, a usage error echoing what was typed)
    is printed through ``terminal_text``; its subcommands' parsers are of this class too.

    Its help names each option once, by its flag (the library parameter's name), and lists the older
    spellings it still accepts after the help text: ``--growth-factor N  ... (also --factor)``."""

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        super()._print_message(terminal_text(message) if message else message, file)

    def _get_formatter(self) -> argparse.HelpFormatter:
        return _one_name(self.formatter_class)(prog=self.prog)


@functools.cache
def _one_name(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """``formatter``, showing an option of several spellings by its first, the others after its help."""

    class OneName(formatter):  # type: ignore[valid-type, misc]
        def _format_action_invocation(self, action: argparse.Action) -> str:
            if _older_spellings(action):
                action = copy.copy(action)
                action.option_strings = action.option_strings[:1]
            return super()._format_action_invocation(action)

        def _get_help_string(self, action: argparse.Action) -> str | None:
            text = super()._get_help_string(action)
            also = _older_spellings(action)
            return f"{text} (also {', '.join(also)})" if text and also else text

    return OneName


def _older_spellings(action: argparse.Action) -> list[str]:
    """The spellings an option accepts beside its flag (``--factor`` beside ``--growth-factor``); ``-h``, the
    short form of ``--help``, is not one."""
    strings = action.option_strings
    return strings[1:] if len(strings) > 1 and all(s.startswith("--") for s in strings) else []


# One module per command family; each adds its subcommands to the parser.
COMMANDS = (report.add, params.add, plot.add, inputs.add_demo, inputs.add_positions, inputs.add_encode,
            search.add_neighbors, search.add_hubs, search.add_graph, compress.add, projector.add, export.add,
            audit.add, diff.add)
