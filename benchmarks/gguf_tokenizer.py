"""Write a Hugging Face tokenizer folder from a GGUF file's own tokenizer (BPE ``gpt2`` models, SmolLM2's).

    python gguf_tokenizer.py MODEL.gguf OUT_DIR        (run by the AIPerf venv's Python: needs gguf, tokenizers)

AIPerf loads a tokenizer even when it counts tokens from the server's ``usage`` (``--use-server-token-count``),
and its ``builtin`` one downloads tiktoken's table at first use, which this machine cannot. The GGUF holds the
model's vocabulary and merges (``tokenizer.ggml.*``); transformers' own GGUF import needs torch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gguf import GGUFReader
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

CONTROL = 3  # llama.cpp token type: control (special) token


def main(gguf: str, out: str) -> None:
    fields = GGUFReader(gguf).fields
    value = {k: f.contents() for k, f in fields.items() if k.startswith("tokenizer.")}
    if value["tokenizer.ggml.model"] != "gpt2":
        raise SystemExit(f"{gguf}: tokenizer model {value['tokenizer.ggml.model']!r}, only gpt2 (byte-level BPE) here")
    tokens = value["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in value["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = [t for t, kind in zip(tokens, value["tokenizer.ggml.token_type"], strict=True) if kind == CONTROL]
    tokenizer.add_special_tokens(special)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": tokens[value["tokenizer.ggml.bos_token_id"]],
        "eos_token": tokens[value["tokenizer.ggml.eos_token_id"]],
        "chat_template": value.get("tokenizer.chat_template"),
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
