"""C26: a folder holding the same model twice (Hugging Face names and Mistral's consolidated names) counts one copy.

By hand: token 32 x 8 = 256, head 256, other up 16 x 8 + down 8 x 16 + norm 8 = 264,
total 776; the file counted is the one transformers loads, model.safetensors.
"""

from embedlab import params
from safetensors_writer import f32, write_config, write_safetensors

V, D, FFN = 32, 8, 16


def _tensor(shape, start):
    n = 1
    for s in shape:
        n *= s
    return "F32", shape, f32(*(float(start + i) for i in range(n)))


def test_a_consolidated_copy_is_not_counted_again(tmp_path):
    table, head = _tensor((V, D), 0), _tensor((V, D), 1000)  # the head holds other values than the table
    up, down, norm = _tensor((FFN, D), 0), _tensor((D, FFN), 0), _tensor((D,), 0)
    write_safetensors(tmp_path / "model.safetensors", {
        "model.embed_tokens.weight": table, "model.layers.0.mlp.up_proj.weight": up,
        "model.layers.0.mlp.down_proj.weight": down, "model.norm.weight": norm, "lm_head.weight": head})
    write_safetensors(tmp_path / "consolidated.safetensors", {
        "tok_embeddings.weight": table, "layers.0.feed_forward.w1.weight": up,
        "layers.0.feed_forward.w2.weight": down, "norm.weight": norm, "output.weight": head})
    write_config(tmp_path, model_type="mistral", tie_word_embeddings=False, vocab_size=V, hidden_size=D)
    count = params(model=str(tmp_path)).count
    b = count.breakdown
    assert (b.token, b.head, b.other, b.total, b.tied) == (256, 256, 264, 776, False)
    assert count.files == (str(tmp_path / "model.safetensors"),)
    assert count.to_dict()["files"] == [str(tmp_path / "model.safetensors")]
    assert count.left_out == (str(tmp_path / "consolidated.safetensors"),)  # named, not counted
