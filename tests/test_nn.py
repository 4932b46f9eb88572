"""nn: the torch modules, their public contract, and the facts behind the shapes.

Oracles: the NumPy formulas in ``positional`` (themselves checked against the
papers in test_positional.py), ``math`` loops, hand-computed values, and
autograd facts that hold by construction (unused rows get exactly zero
gradient; a tied weight sums the gradients of both uses).
"""

from __future__ import annotations

import doctest
import math

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from embedlab import nn as enn  # noqa: E402
from embedlab.measure.demo import DemoSettings, demo  # noqa: E402
from embedlab.engine import positional  # noqa: E402
from embedlab.errors import TokenIdError  # noqa: E402

pytestmark = pytest.mark.torch


def test_doctests():
    assert doctest.testmod(enn).failed == 0


# -- TokenEmbedding ------------------------------------------------------------

def test_token_embedding_shape_and_init():
    torch.manual_seed(0)
    emb = enn.TokenEmbedding(vocab_size=1000, d_model=64)
    assert isinstance(emb.embedding, torch.nn.Embedding)
    assert tuple(emb(torch.randint(0, 1000, (3, 7))).shape) == (3, 7, 64)
    assert emb.embedding.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert enn.count_parameters(emb) == 1000 * 64


def test_token_embedding_input_checks():
    emb = enn.TokenEmbedding(8, 4)
    with pytest.raises(TypeError, match="int64"):
        emb(torch.zeros(2, 3, dtype=torch.float32))
    with pytest.raises(TypeError):
        emb(torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        emb(torch.zeros(5, dtype=torch.long))
    with pytest.raises(IndexError, match="token id 100 is out of range for V=8"):
        emb(torch.tensor([[3, 100]]))
    with pytest.raises(TokenIdError, match="token id -1 is out of range for V=8"):
        emb(torch.tensor([[0, -1]]))
    with pytest.raises(IndexError, match=r"\b8\b.*V=8"):
        emb(torch.tensor([[8]]))
    assert emb(torch.tensor([[7]]))[0, 0].tolist() == emb.embedding.weight[7].tolist()


def test_token_embedding_ids_resolves_tokens_to_the_rows_forward_reads():
    words = ["king", "queen", "7", "a"]  # id = position; "7" is a token, "1" is not
    emb = enn.TokenEmbedding(4, 2)
    ids = emb.ids([["queen", "7"], ["id:0", "1"]], words)
    assert ids.dtype == torch.long and ids.tolist() == [[1, 2], [0, 1]]
    W = emb.embedding.weight  # (V, D)
    assert emb(ids)[0, 0].tolist() == W[words.index("queen")].tolist()
    assert emb.ids([[3, 0]]).tolist() == [[3, 0]]  # no vocabulary: ids only


@pytest.mark.parametrize("queries, vocab, error", [
    ([["kingz"]], ["king", "queen", "7", "a"], KeyError),
    ([["king"]], None, TypeError),
    ([[4]], None, TokenIdError),
    ([[-1]], None, TokenIdError),
    ([[True]], None, TypeError),
    (["king", "a"], ["king", "queen", "7", "a"], ValueError),  # (T,), not (B, T)
    ([[0], [1, 2]], None, ValueError),  # ragged
    ([[0]], ["king"], ValueError),  # a vocabulary of another V
])
def test_token_embedding_ids_refuses_bad_entries(queries, vocab, error):
    with pytest.raises(error):
        enn.TokenEmbedding(4, 2).ids(queries, vocab)


@pytest.mark.parametrize("args", [(0, 4), (4, 0), (-1, 4)])
def test_token_embedding_sizes(args):
    with pytest.raises(ValueError):
        enn.TokenEmbedding(*args)


def test_padding_idx():
    emb = enn.TokenEmbedding(6, 3, padding_idx=2)
    assert emb.embedding.weight[2].tolist() == [0.0, 0.0, 0.0]
    emb(torch.tensor([[2, 1]])).sum().backward()
    assert emb.embedding.weight.grad[2].abs().sum().item() == 0.0
    assert emb.embedding.weight.grad[1].abs().sum().item() > 0.0
    with pytest.raises(IndexError, match="padding_idx -1"):
        enn.TokenEmbedding(6, 3, padding_idx=-1)
    with pytest.raises(IndexError, match="padding_idx 6"):
        enn.TokenEmbedding(6, 3, padding_idx=6)


def test_unused_rows_get_exactly_zero_gradient():
    torch.manual_seed(0)
    emb = enn.TokenEmbedding(10, 4)
    ids = torch.tensor([[1, 2], [2, 5]])
    (emb(ids) ** 2).sum().backward()
    grad = emb.embedding.weight.grad
    used = {1, 2, 5}
    for row in range(10):
        if row in used:
            assert grad[row].abs().sum().item() > 0.0
        else:
            assert torch.equal(grad[row], torch.zeros(4))


# -- position embeddings -----------------------------------------------------------

def test_learned_positions():
    pos = enn.LearnedPositionalEmbedding(max_context_length=64, d_model=16)
    assert tuple(pos(seq_len=10).shape) == (10, 16)
    assert enn.count_parameters(pos) == 64 * 16
    assert torch.equal(pos(3, offset=5), pos.embedding.weight[5:8])
    with pytest.raises(ValueError, match="seq_len 65 exceeds max_context_length 64"):
        pos(65)
    with pytest.raises(ValueError, match="seq_len must be >= 1, got 0"):
        pos(0)
    with pytest.raises(ValueError, match=r"positions 60\.\.64 .* 64"):
        pos(5, offset=60)
    with pytest.raises(TypeError):
        pos(2.0)


def test_learned_positions_are_a_lookup_not_a_view():
    torch.manual_seed(0)
    pos = enn.LearnedPositionalEmbedding(8, 4)
    before = pos.embedding.weight.detach().clone()
    out = pos(3, offset=2)  # (3, D)
    with torch.no_grad():
        out.add_(100.0)  # a caller's in-place edit of the output
    assert torch.equal(pos.embedding.weight.detach(), before)


def test_learned_positions_gradient_matches_nn_embedding():
    torch.manual_seed(0)
    pos = enn.LearnedPositionalEmbedding(8, 4)
    oracle = torch.nn.Embedding.from_pretrained(pos.embedding.weight.detach().clone(), freeze=False)
    weights = torch.randn(3, 4)
    (pos(3, offset=2) * weights).sum().backward()
    (oracle(torch.arange(2, 5)) * weights).sum().backward()
    assert torch.equal(pos.embedding.weight.grad, oracle.weight.grad)
    assert torch.equal(pos.embedding.weight.grad[2:5], weights)  # d(sum(P[t] * w_t)) / dP[t] = w_t
    assert torch.count_nonzero(pos.embedding.weight.grad[[0, 1, 5, 6, 7]]) == 0


def test_padding_row_gets_gradient_through_the_tied_head_only():
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(6, 3, padding_idx=2)
    ids = torch.tensor([[2, 1, 2]])
    (tok(ids) ** 2).sum().backward()  # through the lookup alone
    assert torch.count_nonzero(tok.embedding.weight.grad[2]) == 0
    tok.zero_grad()
    hidden = torch.randn(4, 3)  # (N, D)
    target = torch.tensor([0, 1, 3, 4])  # the padding token is never a target
    torch.nn.functional.cross_entropy(enn.TiedLMHead(tok)(hidden), target).backward()
    # By hand: d(mean CE) / dW[2] = mean_n (softmax(h_n W^T)[2] - [y_n == 2]) * h_n = mean_n p_n[2] * h_n.
    p = torch.softmax(hidden @ tok.embedding.weight.detach().T, dim=-1)  # (N, V)
    expected = (p[:, 2:3] * hidden).mean(dim=0)  # (D,)
    assert torch.count_nonzero(tok.embedding.weight.grad[2]) == 3
    assert torch.allclose(tok.embedding.weight.grad[2], expected, atol=1e-7)


def test_sinusoidal_buffer_equals_numpy_table_and_formula():
    d_model, base = 8, 10000.0
    pe = enn.SinusoidalPositionalEmbedding(max_context_length=16, d_model=d_model, base=base)
    assert list(pe.parameters()) == []
    assert enn.count_parameters(pe) == 0
    assert "pe" in dict(pe.named_buffers()) and "pe" not in pe.state_dict()
    expected = torch.from_numpy(positional.sinusoidal_table(16, d_model, base)).float()
    assert torch.equal(pe.pe, expected)
    table = pe(seq_len=4)
    for p in range(4):
        for k in range(d_model // 2):
            denom = base ** (2 * k / d_model)
            assert table[p, 2 * k].item() == pytest.approx(math.sin(p / denom), abs=1e-6)
            assert table[p, 2 * k + 1].item() == pytest.approx(math.cos(p / denom), abs=1e-6)
    with pytest.raises(ValueError, match="seq_len 17 exceeds max_context_length 16"):
        pe(17)


def test_two_sinusoidal_instances_are_equal():
    a = enn.SinusoidalPositionalEmbedding(32, 16)
    b = enn.SinusoidalPositionalEmbedding(32, 16)
    assert torch.equal(a(32), b(32))


def test_sinusoidal_odd_d_model():
    pe = enn.SinusoidalPositionalEmbedding(8, 5)
    assert tuple(pe(8).shape) == (8, 5)


# -- composer --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["learned", "sinusoidal"])
def test_composer_is_token_plus_position_along_time(kind):
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(50, 8)
    pos = enn.LearnedPositionalEmbedding(32, 8) if kind == "learned" else enn.SinusoidalPositionalEmbedding(32, 8)
    composer = enn.EmbeddingComposer(tok, pos)
    assert composer.d_model == 8
    ids = torch.randint(0, 50, (3, 5))
    out = composer(ids)
    assert tuple(out.shape) == (3, 5, 8)
    E, P = tok.embedding.weight, pos.table
    for b in range(3):
        for t in range(5):
            assert torch.equal(out[b, t], E[ids[b, t]] + P[t])


def test_composer_scale_by_sqrt_d():
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(10, 16)
    pos = enn.SinusoidalPositionalEmbedding(8, 16)
    ids = torch.tensor([[1, 2, 3]])
    out = enn.EmbeddingComposer(tok, pos, scale_by_sqrt_d=True)(ids)
    expected = tok(ids).double() * 4.0 + pos(3).double()
    torch.testing.assert_close(out.double(), expected, rtol=1e-6, atol=1e-6)


def test_composer_argument_checks():
    tok = enn.TokenEmbedding(10, 4)
    with pytest.raises(TypeError, match="TokenEmbedding"):
        enn.EmbeddingComposer(torch.nn.Embedding(10, 4), enn.SinusoidalPositionalEmbedding(8, 4))
    with pytest.raises(TypeError, match="RotaryEmbedding"):
        enn.EmbeddingComposer(tok, enn.RotaryEmbedding(4))
    with pytest.raises(ValueError, match="d_model=4.*d_model=8"):
        enn.EmbeddingComposer(tok, enn.SinusoidalPositionalEmbedding(8, 8))
    composer = enn.EmbeddingComposer(tok, enn.SinusoidalPositionalEmbedding(8, 4))
    with pytest.raises(ValueError):
        composer(torch.zeros(4, dtype=torch.long))


# -- heads -------------------------------------------------------------------------------

def test_tied_head_shares_the_parameter():
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(12, 6)
    head = enn.TiedLMHead(tok)
    assert head.weight is tok.embedding.weight
    h = torch.randn(2, 3, 6)
    torch.testing.assert_close(head(h), h @ tok.embedding.weight.T)
    assert tuple(head(h).shape) == (2, 3, 12)
    with torch.no_grad():
        tok.embedding.weight[4].fill_(1.5)  # a change through the embedding is seen by the head
    assert head.weight[4].tolist() == [1.5] * 6
    with pytest.raises(ValueError, match=r"D=6"):
        head(torch.randn(2, 5))
    with pytest.raises(TypeError):
        enn.TiedLMHead(torch.nn.Embedding(12, 6))


def test_tied_head_gives_every_row_a_gradient():
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(10, 4)
    pos = enn.LearnedPositionalEmbedding(8, 4)
    head = enn.TiedLMHead(tok)
    ids = torch.tensor([[1, 2, 3]])
    logits = head(enn.EmbeddingComposer(tok, pos)(ids))  # (1, 3, 10)
    torch.nn.functional.cross_entropy(logits.view(-1, 10), torch.tensor([2, 3, 4])).backward()
    grad = tok.embedding.weight.grad
    assert all(grad[row].abs().sum().item() > 0.0 for row in range(10))


def test_tied_gradient_is_the_sum_of_both_uses():
    torch.manual_seed(0)
    tok = enn.TokenEmbedding(7, 3)
    ids = torch.tensor([[0, 3]])
    target = torch.tensor([1, 5])
    loss = torch.nn.functional.cross_entropy(enn.TiedLMHead(tok)(tok(ids)).view(-1, 7), target)
    loss.backward()
    tied_grad = tok.embedding.weight.grad.clone()
    # the same computation with two separate copies of the table
    E1 = tok.embedding.weight.detach().clone().requires_grad_()
    E2 = tok.embedding.weight.detach().clone().requires_grad_()
    torch.nn.functional.cross_entropy((E1[ids] @ E2.T).view(-1, 7), target).backward()
    torch.testing.assert_close(tied_grad, E1.grad + E2.grad)


def test_untied_head():
    head = enn.UntiedLMHead(12, 6)
    assert tuple(head.weight.shape) == (12, 6)
    assert tuple(head(torch.randn(2, 3, 6)).shape) == (2, 3, 12)


# -- parameter counts ------------------------------------------------------------------------

def test_parameter_counts():
    V, D, T_max = 50, 8, 16
    tok = enn.TokenEmbedding(V, D)
    base = enn.count_parameters(tok)
    assert base == V * D
    assert enn.count_parameters(enn.LearnedPositionalEmbedding(T_max, D)) == T_max * D
    assert enn.count_parameters(enn.SinusoidalPositionalEmbedding(T_max, D)) == 0
    assert enn.count_parameters(enn.RotaryEmbedding(D)) == 0
    assert enn.count_parameters(enn.ALiBi(4)) == 0
    assert enn.count_parameters(torch.nn.ModuleList([tok, enn.TiedLMHead(tok)])) - base == 0
    assert enn.count_parameters(torch.nn.ModuleList([tok, enn.UntiedLMHead(V, D)])) - base == V * D
    model = torch.nn.ModuleList([enn.EmbeddingComposer(tok, enn.LearnedPositionalEmbedding(T_max, D)),
                                 enn.TiedLMHead(tok)])
    assert enn.count_parameters(model) == V * D + T_max * D


def test_count_parameters_shared_storage_and_frozen():
    a = torch.nn.Linear(3, 4, bias=False)
    b = torch.nn.Linear(3, 4, bias=False)
    b.weight = torch.nn.Parameter(a.weight.data)  # a second Parameter over the same storage
    assert b.weight is not a.weight
    assert enn.count_parameters(torch.nn.ModuleList([a, b])) == 12
    frozen = torch.nn.Linear(3, 4, bias=False).requires_grad_(False)
    assert enn.count_parameters(torch.nn.ModuleList([a, frozen])) == 12


# -- rotary and ALiBi: torch agrees with NumPy ---------------------------------------------------------

@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("offset", [0, 9])
def test_rotary_matches_numpy(pairing, offset):
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8, dtype=torch.float64), torch.randn(2, 3, 5, 8, dtype=torch.float64)
    rope = enn.RotaryEmbedding(8, base=500.0, pairing=pairing)
    q2, k2 = rope(q, k, offset=offset)
    positions = np.arange(offset, offset + 5)
    np.testing.assert_allclose(q2.numpy(), positional.apply_rope(q.numpy(), positions, 500.0, pairing), atol=1e-12)
    np.testing.assert_allclose(k2.numpy(), positional.apply_rope(k.numpy(), positions, 500.0, pairing), atol=1e-12)


def test_rotary_properties_and_dtype():
    torch.manual_seed(0)
    rope = enn.RotaryEmbedding(16)
    x = torch.randn(1, 2, 10, 16)
    out = rope.rotate(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(out[..., 0, :], x[..., 0, :])
    assert rope.rotate(x.to(torch.bfloat16)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="head_dim=7"):
        enn.RotaryEmbedding(7)
    with pytest.raises(ValueError, match="'sideways'"):
        enn.RotaryEmbedding(8, pairing="sideways")
    with pytest.raises(ValueError, match="Dh=16"):
        rope.rotate(torch.randn(2, 8))


@pytest.mark.parametrize("heads", [1, 3, 6, 8, 12])
def test_alibi_matches_numpy(heads):
    bias = enn.ALiBi(heads)(7)
    assert tuple(bias.shape) == (heads, 7, 7)
    np.testing.assert_array_equal(bias.numpy(), positional.alibi_bias(heads, 7).astype(np.float32))


# -- neighbour_cosine_curve ---------------------------------------------------------------------------

def test_neighbour_cosine_curve():
    torch.manual_seed(0)
    assert len(enn.neighbour_cosine_curve(torch.randn(20, 8), max_offset=5)) == 5
    sinusoidal = enn.neighbour_cosine_curve(enn.SinusoidalPositionalEmbedding(128, 64).pe, max_offset=6)
    assert sinusoidal[0] > sinusoidal[5]
    omegas = [10000.0 ** (-2 * i / 64) for i in range(32)]
    expected = [2 / 64 * sum(math.cos(k * w) for w in omegas) for k in range(1, 7)]
    assert sinusoidal == pytest.approx(expected, abs=1e-6)
    learned = enn.neighbour_cosine_curve(enn.LearnedPositionalEmbedding(512, 64).embedding.weight, max_offset=6)
    # rows drawn independently: each cosine is ~0 +- 1/8, their mean over ~500 pairs ~0 +- 0.006
    assert all(abs(c) < 0.05 for c in learned)
    assert enn.neighbour_cosine_curve(np.eye(4), 2) == [0.0, 0.0]


@pytest.mark.parametrize("max_offset", [0, 20, 25])
def test_neighbour_cosine_curve_errors(max_offset):
    with pytest.raises(ValueError, match=f"max_offset {max_offset}"):
        enn.neighbour_cosine_curve(torch.randn(20, 8), max_offset=max_offset)


def test_neighbour_cosine_curve_needs_2d():
    with pytest.raises(ValueError, match="T_max, D"):
        enn.neighbour_cosine_curve(torch.randn(20), 2)


# -- demo ---------------------------------------------------------------------------------------------------

def test_demo_defaults():
    state = torch.random.get_rng_state()
    result = demo()
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is left alone
    assert result.shapes == {"ids": [4, 32], "token": [4, 32, 64], "learned_input": [4, 32, 64],
                             "sinusoidal_input": [4, 32, 64], "tied_logits": [4, 32, 320]}
    assert result.parameters == {"token": 320 * 64, "learned_positions": 128 * 64, "sinusoidal_positions": 0,
                                 "rotary": 0, "tied_head": 0, "untied_head": 320 * 64}
    assert result.max_abs_composition_error == 0.0
    assert result.offsets == [1, 2, 3, 4, 5, 6]
    assert len(result.wavelengths) == 32
    assert result.bands_longer_than_context == sum(w > 128 for w in positional.wavelengths(64))
    assert "129" in result.too_long_error and "128" in result.too_long_error
    assert demo() == result  # same seed, same numbers


def test_demo_band_count_follows_d_model():
    assert len(demo(DemoSettings(d_model=32)).wavelengths) == 16


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_neighbour_cosine_curve_refuses_a_non_finite_row(bad):
    table = torch.ones(6, 4)
    table[3] = bad  # without the check a NaN row would count as a zero row: a finite, wrong curve
    with pytest.raises(ValueError, match="row 3"):
        enn.neighbour_cosine_curve(table, 2)
