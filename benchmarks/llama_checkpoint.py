"""Write a Llama-3-shaped checkpoint folder of random bf16 rows, for the real-size benchmarks (no download).

The folder holds what a user's Llama-3-8B folder holds at its two ends:

- ``model-00001-of-00002.safetensors``: ``model.embed_tokens.weight``, (V, D) bf16;
- ``model-00002-of-00002.safetensors``: ``lm_head.weight`` (V, D) bf16 (an untied head) and
  ``model.norm.weight`` (D,) bf16;
- ``model.safetensors.index.json``, ``config.json`` (LlamaForCausalLM, V = 128,256, D = 4,096,
  ``tie_word_embeddings: false``) and a ``tokenizer.json`` (a WordLevel vocabulary of V - 256
  tokens and 256 added special tokens, ``<|begin_of_text|>``, ``<|reserved_special_token_N|>``, as
  Llama 3 ends its vocabulary).

Rows are standard normal times 0.02 (Llama's initializer range), rounded to bf16, seed 0; the
256 reserved rows of the input table are one shared vector plus 1e-3 noise, as a real model's
never-trained rows are. About 2.1 GB on disk; the float32 tables it becomes are 2.1 GB each.

Usage::

    python benchmarks/llama_checkpoint.py /tmp/llama3-shaped           # V = 128,256, D = 4,096
    python benchmarks/llama_checkpoint.py /tmp/small --vocab-size 32000 --d-model 1024

Needs torch (to write bf16) and tokenizers (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

V_LLAMA3, D_LLAMA3, RESERVED = 128_256, 4_096, 256


def write_checkpoint(folder: Path, vocab_size: int = V_LLAMA3, d_model: int = D_LLAMA3, seed: int = 0) -> Path:
    """Write the folder (module docstring); returns it. Existing files of the same names are replaced."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    reserved = min(RESERVED, vocab_size // 2)
    base = vocab_size - reserved

    def table(trained_tail: bool) -> torch.Tensor:
        W = torch.empty(vocab_size, d_model, dtype=torch.bfloat16)
        for a in range(0, vocab_size, 8192):  # in blocks: never a float32 copy of the whole table
            b = min(vocab_size, a + 8192)
            W[a:b] = (torch.randn(b - a, d_model, generator=g) * 0.02).to(torch.bfloat16)
        if not trained_tail:
            shared = torch.randn(d_model, generator=g) * 0.02
            W[base:] = (shared + 1e-3 * torch.randn(reserved, d_model, generator=g)).to(torch.bfloat16)
        return W

    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    save_file({"model.embed_tokens.weight": table(trained_tail=False)}, str(folder / first),
              metadata={"format": "pt"})
    save_file({"lm_head.weight": table(trained_tail=True),
               "model.norm.weight": torch.ones(d_model, dtype=torch.bfloat16)}, str(folder / second),
              metadata={"format": "pt"})
    size = 2 * 2 * vocab_size * d_model + 2 * d_model
    index = {"metadata": {"total_size": size},
             "weight_map": {"model.embed_tokens.weight": first, "lm_head.weight": second,
                            "model.norm.weight": second}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab_size,
        "hidden_size": d_model, "intermediate_size": 14_336 if d_model == D_LLAMA3 else 4 * d_model,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131_072, "rms_norm_eps": 1e-5, "rope_theta": 500_000.0,
        "tie_word_embeddings": False, "bos_token_id": base, "eos_token_id": base + 1,
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    vocab = {"<unk>": 0, **{f"tok{i}": i for i in range(1, base)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>"
                                                            for i in range(reserved - 2)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.save(str(folder / "tokenizer.json"))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--vocab-size", type=int, default=V_LLAMA3)
    parser.add_argument("--d-model", type=int, default=D_LLAMA3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    write_checkpoint(args.folder, args.vocab_size, args.d_model, args.seed)
    size = sum(os.path.getsize(p) for p in args.folder.iterdir())
    print(f"wrote {args.folder}: V={args.vocab_size:,} D={args.d_model:,}, {size / 1e9:.2f} GB "
          f"in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
