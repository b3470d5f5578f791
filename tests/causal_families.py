"""Tiny random-weight causal LMs of many decoder families, built locally in seconds (no model hub).

Each family is built the way its real checkpoints are: the architecture's own config and ``*ForCausalLM`` class of
transformers 5.x, and a tokenizer of the family's real kind trained offline with the ``tokenizers`` library on the
corpus of ``tests/families.py`` (the project's word lists, names and contexts: Gerald, Jennifer, nurse, hunter, yes,
maybe, no are all in it), saved with ``save_pretrained``:

==========  ===================  =================================================================================
family      architecture         tokenizer
==========  ===================  =================================================================================
gpt2        GPT-2                byte-level BPE, GPT-2's regex, no BOS, offsets with the space (untrimmed)
pythia      GPT-NeoX             byte-level BPE (GPTNeoXTokenizer: <|endoftext|> <|padding|> first, trimmed offsets)
opt         OPT                  byte-level BPE with </s> as BOS in front of every text (OPT's)
llama       Llama                SentencePiece BPE: Metaspace "▁", prefix space, byte fallback <0x..>, BOS <s>
llama3      Llama (Llama 3)      byte-level BPE with Llama 3's (cl100k's) regex, BOS <|begin_of_text|>, its chat
                                 template writing the BOS itself
mistral     Mistral              SentencePiece BPE as Llama 2's original tokenizer.json: the normalizer prepends
                                 "▁" and turns spaces into "▁", byte fallback; sliding window 8 on every layer
qwen2       Qwen2                byte-level BPE with Qwen's regex, no BOS, ChatML template; sliding window 8 on the
                                 second layer (mixed layer kinds)
qwen3       Qwen3                as qwen2's tokenizer; q/k norms, no sliding window
gemma2      Gemma 2              SentencePiece BPE as Gemma's: spaces become "▁", no prefix space, byte fallback,
                                 BOS <bos>, its chat template; final-logit softcapping 5 (init 0.5, so the cap
                                 bends the logits), local layers with window 8, eager attention
gemma3      Gemma 3 (text)       Gemma's tokenizer; local/global layers with window 8
phi3        Phi-3                SentencePiece BPE (Llama's) + <|user|> <|assistant|> <|end|>, no BOS, Phi-3's chat
                                 template; sliding window 8 on every layer
olmo2       OLMo 2               byte-level BPE with cl100k's regex (GPT2Tokenizer class), no BOS
==========  ===================  =================================================================================

Hidden size 32, two layers, four heads (two key/value heads where the family groups them), 256 positions.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


E = sys.modules["stereoprobe_test_families"]  # tests/families.py, loaded first by tests/conftest.py
corpus, save, copy_without, copy_tokenizer = E.corpus, E.save, E.copy_without, E.copy_tokenizer
TOKENIZER_FILES = E.TOKENIZER_FILES

GPT2_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: Llama 3's and OLMo 2's pre-tokenizer (tiktoken's cl100k_base)
CL100K_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>'"
          " + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA3_CHAT = ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
               "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
GEMMA_CHAT = ("{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' "
              "else message['role'] %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
              "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")
PHI3_CHAT = ("{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
             "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


# -- tokenizers ---------------------------------------------------------------------------------------------------
#: words the causal probes prompt with besides the corpus's (label words, the chat test's question)
EXTRA_WORDS = ("entailment neutral contradiction Yes Maybe No Answer Question Options True False Paris London France "
               "capital What").split()


def _texts() -> list[str]:
    lines, words = corpus()
    words = (*words, *EXTRA_WORDS)
    return list(lines) + [" " + w for w in words] + [" ".join(words)]


@lru_cache(maxsize=None)
def byte_bpe(regex: str) -> tuple[dict, list]:
    """(vocab, merges) of a byte-level BPE trained on the corpus with the pre-tokenizer ``regex`` (every byte in the
    vocabulary; no special tokens)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=40_000, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_texts(), trainer)
    state = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]
    return dict(state["vocab"]), merges


@lru_cache(maxsize=None)
def sentencepiece_bpe() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(pieces, merges) of a SentencePiece-style BPE trained on the corpus: words as "▁word" pieces (a space before
    every word), no piece mixing letters with punctuation or digits, no byte pieces (the tokenizers add
    <0x00>…<0xFF> for byte fallback)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=40_000, min_frequency=1, show_progress=False, limit_alphabet=200)
    tok.train_from_iterator(_texts(), trainer)
    state = json.loads(tok.to_str())["model"]
    vocab = state["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]

    def plain(piece: str) -> bool:  # as SentencePiece's split_by_unicode_script: no piece mixes letters and others
        core = piece.lstrip("▁")
        return core.isalpha() or not any(c.isalpha() for c in core)

    merges = [m for m in merges if plain(m[0] + m[1])]
    return tuple(p for p in sorted(vocab, key=vocab.get) if plain(p)), tuple(merges)


BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _sp_vocab(specials: list[str], extra: list[str] = ()) -> tuple[dict, list]:
    pieces, merges = sentencepiece_bpe()
    tokens = list(dict.fromkeys([*specials, *BYTES, *pieces, *extra]))
    return {t: i for i, t in enumerate(tokens)}, list(merges)


def _with_specials(vocab: dict, specials: list[str], front: bool = True) -> dict:
    rest = [t for t in sorted(vocab, key=vocab.get) if t not in specials]
    tokens = [*specials, *rest] if front else [*rest, *specials]
    return {t: i for i, t in enumerate(tokens)}


def gpt2_tokenizer():
    from transformers import GPT2Tokenizer

    vocab, merges = byte_bpe(GPT2_REGEX)
    return GPT2Tokenizer(vocab=_with_specials(vocab, ["<|endoftext|>"], front=False), merges=merges)


def pythia_tokenizer():
    from transformers import GPTNeoXTokenizer

    vocab, merges = byte_bpe(GPT2_REGEX)
    return GPTNeoXTokenizer(vocab=_with_specials(vocab, ["<|endoftext|>", "<|padding|>"]), merges=merges)


def opt_tokenizer():
    from transformers import GPT2Tokenizer

    vocab, merges = byte_bpe(GPT2_REGEX)
    return GPT2Tokenizer(vocab=_with_specials(vocab, ["<s>", "<pad>", "</s>", "<unk>"]), merges=merges,
                         bos_token="</s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", add_bos_token=True)


def llama_tokenizer():
    from transformers import LlamaTokenizer

    vocab, merges = _sp_vocab(["<unk>", "<s>", "</s>"])
    return LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True)


def llama3_tokenizer():
    """Llama 3's kind: tiktoken-style byte-level BPE, <|begin_of_text|> in front (a TemplateProcessing, as its
    tokenizer.json), chat header tokens after the BPE tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab, merges = byte_bpe(CL100K_REGEX)
    backend = Tokenizer(models.BPE(vocab, merges, ignore_merges=True))
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CL100K_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    backend.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    bos = backend.token_to_id("<|begin_of_text|>")
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                   model_input_names=["input_ids", "attention_mask"], chat_template=LLAMA3_CHAT,
                                   clean_up_tokenization_spaces=False)


def mistral_tokenizer():
    """Llama 2's / Mistral 7B v0.1's original tokenizer.json: no pre-tokenizer, a normalizer that prepends "▁" and
    turns spaces into "▁", byte fallback, a decoder that strips the first space."""
    from tokenizers import Tokenizer, decoders, models, normalizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab, merges = _sp_vocab(["<unk>", "<s>", "</s>"])
    backend = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True,
                                   byte_fallback=True))
    backend.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(content=" ", left=1)])
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B:1",
                                                           special_tokens=[("<s>", vocab["<s>"])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   model_input_names=["input_ids", "attention_mask"],
                                   clean_up_tokenization_spaces=False)


def qwen_tokenizer():
    from transformers import Qwen2Tokenizer

    vocab, merges = byte_bpe(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"""
                             r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
    tok = Qwen2Tokenizer(vocab=_with_specials(vocab, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], front=False),
                         merges=merges, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                         additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    tok.chat_template = CHATML
    return tok


def gemma_tokenizer():
    from transformers import GemmaTokenizer

    vocab, merges = _sp_vocab(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"])
    tok = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True,
                         additional_special_tokens=["<start_of_turn>", "<end_of_turn>"])
    tok.chat_template = GEMMA_CHAT
    return tok


def phi3_tokenizer():
    from transformers import LlamaTokenizer

    vocab, merges = _sp_vocab(["<unk>", "<s>", "</s>"], extra=["<|user|>", "<|assistant|>", "<|end|>", "<|system|>"])
    tok = LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=False, eos_token="<|end|>", pad_token="<unk>",
                         additional_special_tokens=["<|user|>", "<|assistant|>", "<|end|>", "<|system|>"])
    tok.chat_template = PHI3_CHAT
    return tok


def olmo2_tokenizer():
    from tokenizers import Regex, pre_tokenizers
    from transformers import GPT2Tokenizer

    vocab, merges = byte_bpe(CL100K_REGEX)
    tok = GPT2Tokenizer(vocab=_with_specials(vocab, ["<|endoftext|>", "<|pad|>"], front=False), merges=merges,
                        pad_token="<|pad|>")
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CL100K_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    return tok


# -- configs ------------------------------------------------------------------------------------------------------
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=256)


def _ids(tok) -> dict:
    out = {"pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id}
    if tok.bos_token_id is not None:
        out["bos_token_id"] = tok.bos_token_id
    if tok.eos_token_id is not None:
        out["eos_token_id"] = tok.eos_token_id
    return out


def _config(arch: str, tok, **extra):
    import transformers

    return getattr(transformers, f"{arch}Config")(vocab_size=len(tok), **_ids(tok), **extra)


def gpt2_config(tok):
    return _config("GPT2", tok, n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=256)


def gpt_neo_config(tok):
    # local layers window by ROW position through a buffer, not the mask: a packed row longer than 8 nodes would
    # cut a token off its ancestors (the scorer keeps its rows within the window)
    return _config("GPTNeo", tok, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
                   attention_types=[[["global", "local"], 1]], window_size=8, max_position_embeddings=256)


def pythia_config(tok):
    return _config("GPTNeoX", tok, **SMALL, rotary_pct=0.25, use_parallel_residual=True, tie_word_embeddings=False)


def opt_config(tok):
    return _config("OPT", tok, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                   word_embed_proj_dim=32, max_position_embeddings=256, do_layer_norm_before=True)


def llama_config(tok):
    return _config("Llama", tok, **SMALL, num_key_value_heads=2, tie_word_embeddings=False)


def mistral_config(tok):
    return _config("Mistral", tok, **SMALL, num_key_value_heads=2, sliding_window=8, head_dim=8)


def qwen2_config(tok):
    return _config("Qwen2", tok, **SMALL, num_key_value_heads=2, use_sliding_window=True, sliding_window=8,
                   max_window_layers=1, tie_word_embeddings=True)


def qwen3_config(tok):
    return _config("Qwen3", tok, **SMALL, num_key_value_heads=2, head_dim=8, tie_word_embeddings=True)


def gemma2_config(tok):
    return _config("Gemma2", tok, **SMALL, num_key_value_heads=2, head_dim=8, sliding_window=8,
                   final_logit_softcapping=5.0, attn_logit_softcapping=50.0, query_pre_attn_scalar=8,
                   initializer_range=0.5, attn_implementation="eager")


def gemma3_config(tok):
    return _config("Gemma3Text", tok, **SMALL, num_key_value_heads=2, head_dim=8, sliding_window=8,
                   layer_types=["sliding_attention", "full_attention"], query_pre_attn_scalar=8)


def phi3_config(tok):
    return _config("Phi3", tok, **SMALL, num_key_value_heads=2, sliding_window=8, tie_word_embeddings=False)


def olmo2_config(tok):
    return _config("Olmo2", tok, **SMALL, num_key_value_heads=2, tie_word_embeddings=False)


@dataclass(frozen=True)
class Family:
    """One causal family: its ``*ForCausalLM`` class name, tokenizer and config builders, tokenizer kind."""

    name: str
    cls: str
    tokenizer: object
    config: object
    kind: str  # byte-bpe | sentencepiece
    bos: bool  # the tokenizer puts a BOS in front of every text
    chat: bool = False  # it has a chat template
    softcap: bool = False  # final-logit softcapping
    sliding: str = ""  # "", "all" (one window on every layer) or "mixed" (local and global layers)

    def model_class(self):
        import transformers

        return getattr(transformers, self.cls)


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("gpt2", "GPT2LMHeadModel", gpt2_tokenizer, gpt2_config, "byte-bpe", bos=False),
    Family("gpt_neo", "GPTNeoForCausalLM", gpt2_tokenizer, gpt_neo_config, "byte-bpe", bos=False),
    Family("pythia", "GPTNeoXForCausalLM", pythia_tokenizer, pythia_config, "byte-bpe", bos=False),
    Family("opt", "OPTForCausalLM", opt_tokenizer, opt_config, "byte-bpe", bos=True),
    Family("llama", "LlamaForCausalLM", llama_tokenizer, llama_config, "sentencepiece", bos=True),
    Family("llama3", "LlamaForCausalLM", llama3_tokenizer, llama_config, "byte-bpe", bos=True, chat=True),
    Family("mistral", "MistralForCausalLM", mistral_tokenizer, mistral_config, "sentencepiece", bos=True,
           sliding="all"),
    Family("qwen2", "Qwen2ForCausalLM", qwen_tokenizer, qwen2_config, "byte-bpe", bos=False, chat=True,
           sliding="mixed"),
    Family("qwen3", "Qwen3ForCausalLM", qwen_tokenizer, qwen3_config, "byte-bpe", bos=False, chat=True),
    Family("gemma2", "Gemma2ForCausalLM", gemma_tokenizer, gemma2_config, "sentencepiece", bos=True, chat=True,
           softcap=True, sliding="mixed"),
    Family("gemma3", "Gemma3ForCausalLM", gemma_tokenizer, gemma3_config, "sentencepiece", bos=True, chat=True,
           sliding="mixed"),
    Family("phi3", "Phi3ForCausalLM", phi3_tokenizer, phi3_config, "sentencepiece", bos=False, chat=True,
           sliding="all"),
    Family("olmo2", "Olmo2ForCausalLM", olmo2_tokenizer, olmo2_config, "byte-bpe", bos=False),
]}


@lru_cache(maxsize=None)
def tokenizer_of(family: str):
    """The family's tokenizer (built once per process)."""
    return FAMILIES[family].tokenizer()


def build(family: str, folder: str | Path, *, seed: int = 0, base_only: bool = False) -> Path:
    """A tiny random ``family`` causal LM saved with its tokenizer to ``folder`` (safetensors); with ``base_only``
    the bare decoder (``AutoModel``: no output head) instead."""
    import torch
    import transformers

    fam = FAMILIES[family]
    tok = tokenizer_of(family)
    config = fam.config(tok)
    torch.manual_seed(seed)
    if base_only:
        model = transformers.AutoModel.from_config(config)
    else:
        model = fam.model_class()(config)
    model.eval()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save(model, folder)
    tok.save_pretrained(folder)
    return folder


def pickle_only_copy(src: Path, dst: Path, family: str) -> Path:
    """A copy of ``src`` whose weights are only a pickled ``pytorch_model.bin``."""
    import torch

    copy_without(src, dst, [p.name for p in Path(src).glob("*.safetensors")])
    model = FAMILIES[family].model_class().from_pretrained(src)
    torch.save(model.state_dict(), dst / "pytorch_model.bin")
    return dst


def remote_code_copy(src: Path, dst: Path) -> Path:
    """A copy of ``src`` whose config names an architecture of its own repository (``auto_map``)."""
    copy_without(src, dst)
    config = json.loads((dst / "config.json").read_text())
    config["model_type"] = "my_own_decoder"
    config["auto_map"] = {"AutoConfig": "modeling_mine.MyConfig", "AutoModelForCausalLM": "modeling_mine.MyLM"}
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def boosted(folder: Path, family: str, token: int, boost: float = 40.0):
    """The family's model with +``boost`` on ``token``'s output logit: a bias on its output layer (sharing the
    weight, so tied embeddings stay tied); the model's own head code (softcapping included) runs after it."""
    import torch

    model = FAMILIES[family].model_class().from_pretrained(folder).eval()
    head = model.get_output_embeddings()
    layer = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    layer.weight = head.weight
    with torch.no_grad():
        layer.bias.zero_()
        if getattr(head, "bias", None) is not None:
            layer.bias.copy_(head.bias)
        layer.bias[token] += boost
    model.set_output_embeddings(layer)
    return model


def tiny_gguf(path: Path, arch: str = "llama", file_type=None, chat_template: str | None = None) -> Path:
    """A header-only GGUF file (one 8×4 embedding, no model): architecture ``arch``, quantisation ``file_type``
    (default F16) and optionally a chat template, for the tests of what is read from a GGUF header."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if file_type is None else file_type)
    if chat_template:
        writer.add_chat_template(chat_template)
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
