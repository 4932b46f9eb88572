"""Tiny checkpoints for the audit's tests, built with transformers, and their tokenizers built with ``tokenizers``
from an explicit vocabulary, with faults planted where the tests know their ids.

Nothing here calls embedlab. The oracles the tests use live here too, written from the papers and the
libraries, never from embedlab's code:

* ``magikarp_categories``: Land & Bartolo's categorisation (magikarp/tokenization.py, ``categorize_token``),
  one token at a time with the tokenizer object itself;
* ``magikarp_indicators``: their ``embedding_distance_metrics`` (magikarp/utils.py) with scikit-learn's PCA,
  in float64.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

tokenizers = pytest.importorskip("tokenizers")

D = 16  # model width of every tiny checkpoint
SPECIALS = ("<unk>", "<s>", "</s>")


def word_tokenizer(tokens: Sequence[str | None], special: Sequence[str] = SPECIALS, *,
                   split_punctuation: bool = True) -> "tokenizers.Tokenizer":
    """A word-level tokenizer whose id ``i`` is ``tokens[i]`` (None: a hole, no token has that id).

    Words are split at whitespace and, with ``split_punctuation``, at punctuation (as BERT's pre-tokenizer
    does), so a token written with brackets (``[unused0]``, ``<|reserved_special_token_0|>``) cannot be
    produced from its own string unless it is one of the ``special`` tokens, which are matched whole.
    """
    vocab = {token: i for i, token in enumerate(tokens) if token is not None}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token=special[0] if special else None))
    steps = [tokenizers.pre_tokenizers.WhitespaceSplit()]
    if split_punctuation:
        steps.append(tokenizers.pre_tokenizers.Punctuation())
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Sequence(steps)
    tk.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in special])
    return tk


def save_untied(folder: Path, table: np.ndarray, head: np.ndarray, tokenizer: "tokenizers.Tokenizer | None") -> Path:
    """A LlamaForCausalLM (untied) whose token table and lm_head are ``table`` and ``head``, saved with its tokenizer."""
    import torch
    import transformers

    config = transformers.LlamaConfig(vocab_size=len(table), hidden_size=D, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                                      tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(torch.from_numpy(table))
        model.get_output_embeddings().weight.copy_(torch.from_numpy(head))
    return _save(model, folder, tokenizer)


def save_tied(folder: Path, table: np.ndarray, tokenizer: "tokenizers.Tokenizer | None", family: str = "gpt2") -> Path:
    """A tied model (GPT2LMHeadModel, or BertForMaskedLM for ``family="bert"``) whose table is ``table``."""
    import torch
    import transformers

    if family == "bert":
        config = transformers.BertConfig(vocab_size=len(table), hidden_size=D, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=32)
        model = transformers.BertForMaskedLM(config)
    else:
        config = transformers.GPT2Config(vocab_size=len(table), n_embd=D, n_layer=1, n_head=2, n_positions=32,
                                         bos_token_id=1, eos_token_id=2)
        model = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(torch.from_numpy(table))
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # tied, as the test needs
    return _save(model, folder, tokenizer)


def _save(model: object, folder: Path, tokenizer: "tokenizers.Tokenizer | None") -> Path:
    import transformers

    transformers.utils.logging.disable_progress_bar()
    model.save_pretrained(folder, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def trained_rows(n: int, seed: int, scale: float = 1.0) -> np.ndarray:
    """(n, D) float32 rows as a trained table's: random, with a shared offset and one direction of large
    variance (a clear first principal component)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, D)) * scale + 0.3
    rows[:, 0] *= 4
    return rows.astype(np.float32)


def untrained_rows(n: int, seed: int) -> np.ndarray:
    """(n, D) float32 rows as rows never trained look: small, near one shared point."""
    rng = np.random.default_rng(seed)
    return (0.05 + 0.01 * rng.standard_normal((n, D))).astype(np.float32)


# -- oracles ----------------------------------------------------------------------------------

def magikarp_categories(tokenizer: "tokenizers.Tokenizer", special: set[int],
                        prefixes: Sequence[tuple[str, int]] = ()) -> dict[int, str]:
    """Land & Bartolo's categories (magikarp/tokenization.py, ``categorize_token``) of every id with a token,
    decoded and encoded one at a time with ``tokenizer`` (its padding and truncation off).

    ``prefixes``: (prefix, its id) for a tokenizer that adds a leading space (their ``starting_space_mode``):
    each tried in turn on the token alone, the plain call where none survives (where their code asserts).
    """
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def clean_decode(i: int) -> str:
        for prefix, prefix_id in prefixes:
            text = tokenizer.decode([prefix_id, i], skip_special_tokens=False)
            text = text[1:] if text.startswith(" ") else text
            if text.startswith(prefix):
                return text[1:]
        return tokenizer.decode([i], skip_special_tokens=False)

    def clean_encode(s: str) -> list[int]:
        for prefix, prefix_id in prefixes:
            ids = tokenizer.encode(prefix + s, add_special_tokens=False).ids
            if ids[:1] == [prefix_id]:
                return ids[1:]
        return tokenizer.encode(s, add_special_tokens=False).ids

    found = {}
    for token, i in tokenizer.get_vocab(with_added_tokens=True).items():
        s = clean_decode(i)
        again = clean_encode(s)
        if again == [i]:
            found[i] = "OK_SPECIAL" if i in special else "OK"
        elif len(s) >= 3 and s[0] in "[<" and s[-1] in "]>" and any(c.isalpha() for c in s):
            found[i] = "UNREACHABLE_SPECIAL"
        elif "\ufffd" in s:
            found[i] = "UNDECODEABLE"
        elif len(again) == 1:
            found[i] = "UNREACHABLE_SINGLE_TOKEN"
        else:
            found[i] = "UNREACHABLE_MULTI_TOKEN"
    return found


def magikarp_indicators(mat: np.ndarray, reference: Sequence[int]) -> dict[str, np.ndarray]:
    """magikarp/utils.py, ``embedding_distance_metrics``, with scikit-learn's PCA, in float64."""
    from sklearn.decomposition import PCA

    mat = np.asarray(mat, dtype=np.float64)
    reference = list(reference)

    def cosine_distance(m: np.ndarray, v: np.ndarray) -> np.ndarray:
        return 1 - m @ v / np.clip(np.linalg.norm(m, axis=1) * np.linalg.norm(v), 1e-6, None)

    first_pc = PCA(n_components=1).fit(mat).components_[0]
    without_pc = mat - np.outer(mat @ first_pc, first_pc)
    without_mean = mat - mat.mean(axis=0)
    mean_unused = mat[reference].mean(axis=0)
    return {"cosine_distance": cosine_distance(mat, mean_unused),
            "cosine_distance_without_first_pc": cosine_distance(without_pc, without_pc[reference].mean(axis=0)),
            "cosine_distance_without_mean": cosine_distance(without_mean, without_mean[reference].mean(axis=0)),
            "l2_distance": np.linalg.norm(mat - mean_unused, axis=1)}
