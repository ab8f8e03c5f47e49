"""The `magma` command: one module per subcommand, registered here."""

from __future__ import annotations

import typer

from . import explain, replay, simulate, validate

app = typer.Typer(
    name="magma",
    help="A batch scheduler for AI training on Kubernetes that speaks Volcano's language.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("validate")(validate.validate)
app.command("simulate")(simulate.simulate)
app.command("explain")(explain.explain)
app.add_typer(replay.app, name="replay")


@app.callback()
def _root() -> None:
    """magma: gang scheduling, queues, fair share and preemption, with a what-if simulator."""


if __name__ == "__main__":  # pragma: no cover
    app()
