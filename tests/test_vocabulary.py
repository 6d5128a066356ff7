"""One word per concept: each name the code uses for a concept is spelled in one place.

Phase names come from `libreyolo/document/phases.py`; nothing else in the package writes them
as string literals (a second spelling is how a renamed phase silently stops matching). The mode
is `Mode` (train, infer) everywhere in code; its stored and printed noun ("training",
"inference") is spelt only in `libreyolo/document/mode.py`. No two classes share a name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from libreyolo.config.schema import ModeOption
from libreyolo.document import phases
from libreyolo.document.mode import Mode

PACKAGE = Path(__file__).resolve().parents[1] / "libreyolo"
PHASE_WORDS = {
    value for name, value in vars(phases).items() if name.isupper() and isinstance(value, str)
}
# The same spelling naming another concept: kernel and op categories called "optimizer", and
# the predict module's exported functions.
OTHER_CONCEPTS = {
    ("kineto/classify.py", "optimizer"),
    ("analysis/opclass.py", "optimizer"),
    # the optimizer's state, a category of a training step's tensor memory
    ("analysis/tensor_memory.py", "optimizer"),
    ("document/model.py", "optimizer"),
    ("measure/tensor_memory.py", "optimizer"),
    ("workload/yolo9/predict.py", "preprocess"),
    ("workload/yolo9/predict.py", "postprocess"),
    # the trainer probe, a separate program run by libreyolo 1.x's interpreter: it cannot
    # import ours, and names the phases 1.x's trainer reports through its hooks
    ("probe/trainer_probe.py", "dataload"),
    ("probe/trainer_probe.py", "optimizer"),
    # libreyolo 1.6.0's `optimizer` training key (sgd, adam, adamw)
    ("config/overrides.py", "optimizer"),
    ("workload/train_keys.py", "optimizer"),
    ("workload/v16_train_config.py", "optimizer"),
}


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in `path` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def _literals_of(words: set[str], *, home: str, allowed: set[tuple[str, str]]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == home:
            continue
        for line, text in _string_literals(path):
            if text in words and (rel, text) not in allowed:
                found.append(f"{rel}:{line}: {text!r}")
    return found


def test_phase_names_are_spelled_only_in_document_phases() -> None:
    assert {"dataload", "forward", "backward", "optimizer", "postprocess"} <= PHASE_WORDS
    assert _literals_of(PHASE_WORDS, home="document/phases.py", allowed=OTHER_CONCEPTS) == []


def test_phase_tuples_are_built_from_the_names() -> None:
    assert phases.TRAIN_PHASES == ("dataload", "to_device", "forward", "backward", "optimizer")
    assert phases.INFER_STAGES == ("preprocess", "forward", "postprocess")
    assert phases.TRAINING_ONLY.isdisjoint(phases.INFER_STAGES)


def test_mode_nouns_are_spelled_only_in_document_mode() -> None:
    # migrations.py reads libreyolo 1.6.0 files, whose own `mode` key uses the noun.
    allowed = {("document/migrations.py", "training"), ("document/migrations.py", "inference")}
    assert _literals_of({"training", "inference"}, home="document/mode.py", allowed=allowed) == []


@pytest.mark.parametrize(
    ("mode", "noun", "option"),
    [(Mode.TRAIN, "training", ModeOption.run), (Mode.INFER, "inference", ModeOption.infer)],
)
def test_one_mode_three_spellings(mode: Mode, noun: str, option: ModeOption) -> None:
    assert (mode.noun, Mode.of_noun(noun), option.measures) == (noun, mode, mode)


def test_an_unknown_noun_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^not a run mode: 'train'$"):
        Mode.of_noun("train")


def test_no_two_classes_in_the_package_share_a_name() -> None:
    seen: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(path.relative_to(PACKAGE).as_posix())
    assert {name: homes for name, homes in seen.items() if len(homes) > 1} == {}
