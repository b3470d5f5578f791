"""The tests' side of the reference server (tests/reference_server.py): a served lab model for a test, a tiny
random causal LM built in a second, and log P(continuation | context) straight from a model, the value a correct
server's echoed log-probabilities add up to. tests/conftest.py loads it as ``stereoprobe_test_served_reference``."""

from __future__ import annotations

from typing import Any

import torch

from stereoprobe_test_reference_server import ECHO_MODES, ReferenceServer, serving  # noqa: F401  (tests/conftest.py
# loads it first; the tests read these names from here)

#: the sentences the tokenizer of :func:`tiny_causal_lm` learns its merges from
TINY_CORPUS = (
    "The capital of France is Paris.",
    "The capital of Germany is Berlin.",
    "The capital of Italy is Rome.",
    "Paris is a city in France and Berlin is a city in Germany.",
    "The nurse and the hunter met in the city.",
    "Is the answer yes or no? The answer is yes.",
    "She is a doctor, he is a teacher, they are friends.",
)


# ------------------------------------------------------------------------------------------------ direct values

def serve(model_and_tokenizer: tuple, monkeypatch: Any, **behaviour: Any) -> ReferenceServer:
    """A started :class:`ReferenceServer` serving the model as ``ref-model`` (``behaviour``: its switches), with
    ``REF_BASE_URL`` set to it through pytest's ``monkeypatch``; the caller stops it (``server.__exit__``)."""
    server = ReferenceServer(*model_and_tokenizer, model_name="ref-model", **behaviour)
    server.__enter__()
    monkeypatch.setenv("REF_BASE_URL", server.base_url)
    return server


def continuation_logprob(model: Any, tokenizer: Any, context: str, continuation: str) -> float:
    """log P(continuation | context) straight from ``model``: one forward pass over ``tokenizer(context +
    continuation)``, summing the log-probabilities of the tokens that start at or after ``len(context)``."""
    text = context + continuation
    encoding = tokenizer(text, return_offsets_mapping=True)
    ids = list(encoding["input_ids"])
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids], device=device)).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    total = 0.0
    for i in range(1, len(ids)):
        start, end = encoding["offset_mapping"][i]
        if end > start and start >= len(context):
            total += float(logp[i - 1, ids[i]])
    return total


def tiny_causal_lm(seed: int = 0, vocab_size: int = 300) -> tuple[Any, Any]:
    """A tiny random Llama (hidden size 32, two layers, 256 positions) and its tokenizer, built in about a second
    without downloads: a byte-level BPE (no prefix space, untrimmed offsets, a BOS ``<s>`` in front of every text,
    eos ``</s>``, pad ``<pad>``) trained on :data:`TINY_CORPUS` to ``vocab_size`` entries, as a fast tokenizer
    without a chat template. The output weights of the tokens that are no printable ASCII text (control and
    non-ASCII bytes, ``<s>``, ``<pad>``) are zero, so greedy decoding writes readable text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(TINY_CORPUS, trainer=trainer)
    bos = backend.token_to_id("<s>")
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", bos)])])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", model_input_names=["input_ids", "attention_mask"],
                                        clean_up_tokenization_spaces=False)

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # logit 0 for what is no printable ASCII text: greedy decoding writes readable text
        for token_id in range(len(tokenizer)):
            text = tokenizer.decode([token_id])
            special = token_id in tokenizer.all_special_ids and token_id != tokenizer.eos_token_id
            if special or not (text.isascii() and text.isprintable() and text):
                model.lm_head.weight[token_id].zero_()
    return model, tokenizer
