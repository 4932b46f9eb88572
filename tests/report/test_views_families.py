"""`encode`'s terminal view shows a token-type column only where the family has a token-type table (issue 23).

OPT has no token-type table, yet its rows showed a ``type`` column of zeros.
For each tiny checkpoint of ``families.FAMILIES`` (copied, with a word-level
``tokenizer.json`` beside it), whether the model has a token-type table is
asked of the model object transformers loads from the folder (a module named
``token_type_embeddings``, as BERT, RoBERTa, ALBERT and ELECTRA name theirs),
not of embedlab.
"""

from __future__ import annotations

import shutil

import pytest

from families import FAMILIES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from embedlab import cli  # noqa: E402

pytestmark = pytest.mark.torch


def _has_token_types(folder) -> bool:
    transformers.utils.logging.set_verbosity_error()
    model = transformers.AutoModel.from_pretrained(folder, local_files_only=True)
    return any(name.rsplit(".", 1)[-1] == "token_type_embeddings" and module.weight.shape[0] > 0
               for name, module in model.named_modules())


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_the_type_column_is_shown_where_the_family_has_a_token_type_table(hf_families, tmp_path, capsys, name):
    folder = shutil.copytree(hf_families[name].path, tmp_path / name)
    vocab = {"<unk>": 0, **{f"w{i}": i for i in range(3, 1000)}}  # no family's pad id 1 or 2: no padding slot
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tk.save(str(folder / "tokenizer.json"))
    assert cli.main(["encode", "--model", str(folder), "w5 w6"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("t "))
    assert ("type" in header.split("  ")) == _has_token_types(folder), header
