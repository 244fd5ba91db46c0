"""Build the tiny random vision-language model used to test the judge's real loading path.

No weights can be downloaded on our machines, so :class:`brick_gym.judges.backends.TransformersJudge` is tested on a
LLaVA-architecture model built from a config: a 1-layer CLIP vision tower (16×16 input, 8×8 patches → 4 image
tokens per image), a 2-projection MLP and a 2-layer Llama text model, all with random weights (fixed seed). The
tokenizer is a byte-level BPE trained here on the judge's own prompt texts, and the chat template is Jinja that
puts the images of a user turn first, then its text, and reads ``enable_thinking`` like Gemma 4's template does.

Everything is saved with ``save_pretrained`` so that ``AutoProcessor.from_pretrained(dir, padding_side="left")``
and ``AutoModelForMultimodalLM.from_pretrained(dir, dtype="auto")`` load it exactly as they load the paper's
judge. Run from the repository root::

    .venv/bin/python scripts/make_tiny_vlm.py            # writes tests/fixtures/tiny_vlm/
    .venv/bin/python scripts/make_tiny_vlm.py --out DIR

Needs torch, transformers, tokenizers and Pillow; not torchvision (the PIL image processor is used).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

SEED = 1234
VOCAB_SIZE = 384
IMAGE_SIZE = 16
PATCH_SIZE = 8
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>", "<image>", "<start_of_turn>", "<end_of_turn>", "<think>"]
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tiny_vlm"

#: Images first, then text, within each turn; ``enable_thinking`` adds a thinking switch as Gemma 4's template does.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if enable_thinking is defined and enable_thinking -%}"
    "<start_of_turn>system\n<think><end_of_turn>\n"
    "{% endif -%}"
    "{%- for message in messages -%}"
    "<start_of_turn>{{ message['role'] }}\n"
    "{% if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}"
    "{%- for item in message['content'] if item['type'] == 'image' -%}<image>{%- endfor -%}"
    "{%- for item in message['content'] if item['type'] == 'text' -%}{{ item['text'] }}{%- endfor -%}"
    "{%- endif -%}"
    "<end_of_turn>\n"
    "{% endfor -%}"
    "{%- if add_generation_prompt -%}<start_of_turn>assistant\n{% endif -%}"
)


def _corpus() -> list[str]:
    """Training text for the tokenizer: the judge's prompts and some replies, so tokens look like real ones."""
    from brick_gym.judges.pairwise import ALIGN, DESIGN, build_judge_prompt
    from brick_gym.judges.vqa import build_vqa_prompt

    questions = [
        "Is there a red brick house?",
        "Does the house have a door?",
        "Is the roof blue?",
        "Is there a tree next to the house?",
        "Does the car have four wheels?",
    ]
    lines = [
        build_vqa_prompt("A small red house with a blue roof and a tree.", questions),
        build_judge_prompt("align", "A small red house with a blue roof."),
        build_judge_prompt("design"),
        ALIGN,
        DESIGN,
    ]
    lines += [f"{i}: yes\n{i + 1}: no" for i in range(1, 40)]
    lines += ["1", "2", "yes", "no", "The model shows a house, a roof, a door and a window."] * 5
    return lines


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaImageProcessorPil,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(SEED)

    # -- tokenizer: byte-level BPE (no unknown characters), trained deterministically on the prompt texts ----------
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="<end_of_turn>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={"image_token": "<image>"},
    )
    vocab_size = len(tokenizer)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")

    # -- model: LLaVA = CLIP vision tower + MLP projector + Llama, tiny and random -------------------------------
    vision = CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=16,
    )
    text = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_id,
        image_seq_length=(IMAGE_SIZE // PATCH_SIZE) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )

    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS token, dropped again by the "default" strategy
        chat_template=CHAT_TEMPLATE,
        image_token="<image>",
    )

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    for path in out.iterdir():
        path.chmod(0o644)  # safetensors writes 0600; the fixture is committed and read by everyone
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {out} ({len(list(out.iterdir()))} files, {total / 1024:.0f} KiB, vocab {vocab_size})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    build(args.out)


if __name__ == "__main__":
    main()
