"""What a reader's start-up imports: `get` on a current profile.json loads the metric map and
nothing else, so none of the document's classes, the analyses, the parsers of other
subcommands' modules or any third-party library is imported on its way; `summary` builds the
document from msgspec structs, so no dataclass machinery is imported on its way either."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import fixture_dir

# Modules `get` does not use: the typed document (its classes cost the start-up most), the
# whole-profile analyses, the codec's and the trace analyser's JSON library, the renderers of
# other results, colour output.
FORBIDDEN_FOR_GET = {
    "dataclasses",
    "inspect",
    "libreyolo.document.model",
    "libreyolo.document.convert",
    "libreyolo.analysis.summary",
    "libreyolo.analysis.build",
    "libreyolo.kineto",
    "libreyolo.render.jsondoc",
    "libreyolo.render.html",
    "msgspec",
    "rich",
    "torch",
    "numpy",
}
# Modules `summary` of a current profile does not use: dataclasses (and the sweep's files, still
# dataclasses), the trace analyser and what completes older files, other results' renderers,
# colour output. `inspect` is msgspec's own import (typing_extensions), paid by the floor too.
FORBIDDEN_FOR_SUMMARY = {
    "dataclasses",
    "libreyolo.document.sweep_model",
    "libreyolo.document.tune_model",
    "libreyolo.analysis.build",
    "libreyolo.kineto",
    "libreyolo.render.jsondoc",
    "libreyolo.render.html",
    "rich",
    "torch",
    "numpy",
}
_CODE = (
    "import json, sys\n"
    "from libreyolo.cli.main import main\n"
    "status = main(sys.argv[1:])\n"
    "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    "raise SystemExit(status)\n"
)


@pytest.fixture(scope="module")
def current_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A current-schema profile.json (its metric map complete), made from a real GPU trace."""
    from libreyolo import __version__
    from libreyolo.analysis.build import profile_from_trace
    from libreyolo.document.files import save
    from libreyolo.kineto import analyse_trace

    trace = fixture_dir("gpu_traces") / "hta_a100_ddp_train_3steps.json.gz"
    profile = profile_from_trace(
        analyse_trace(str(trace)),
        trace_path="profile_trace.json",
        created=None,
        version=__version__,
    )
    return save(profile, tmp_path_factory.mktemp("get") / "profile.json")


def _reached(forbidden: set[str], *words: str) -> set[str]:
    """The modules of `forbidden` (or below them) that the command line `words` imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _CODE, *words], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stderr))
    return {m for m in loaded if any(m == name or m.startswith(f"{name}.") for name in forbidden)}


def test_get_imports_no_module_it_does_not_use(current_profile: Path) -> None:
    assert _reached(FORBIDDEN_FOR_GET, "profile", "get", str(current_profile), "step_ms") == set()


def test_summary_imports_no_dataclass_machinery(current_profile: Path) -> None:
    assert _reached(FORBIDDEN_FOR_SUMMARY, "profile", "summary", str(current_profile)) == set()
