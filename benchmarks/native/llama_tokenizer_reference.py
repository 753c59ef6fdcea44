#!/usr/bin/env python3
"""Small Llama 3 style tokenizer and reference encodings for checking the Java tokenizer.

Writes, under --out DIR:
  tokenizer.json        a byte-level BPE tokenizer trained here with the `tokenizers` library and configured
                        as Llama 3's: pre_tokenizer Sequence[Split(Llama 3 regex, "isolated"), ByteLevel(
                        use_regex=False)], BPE with ignore_merges, ByteLevel decoder, special tokens after
                        the trained vocabulary (<|begin_of_text|>, <|end_of_text|>, ... as Llama 3 puts them
                        at 128000..128255), and a TemplateProcessing post processor that adds
                        <|begin_of_text|>.
  tokenizer_cases.json  {"tokenizers_version", "ignore_merges", "cases": [{text, ids, ids_plain, decoded,
                        decoded_skip}]}: ids = encode(text) with special tokens, ids_plain without,
                        decoded = decode(ids, skip_special_tokens=False), decoded_skip = decode(ids,
                        skip_special_tokens=True). All from `tokenizers` itself (no transformers clean-up).

The corpus is built here, deterministically, so the same `tokenizers` version writes the same files.

  python3 llama_tokenizer_reference.py --out /tmp/llama-tokenizer
"""
import argparse
import json
import os
import random

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# Llama 3's pre-tokenizer pattern, as in its tokenizer.json.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>", "<|python_tag|>"] + ["<|reserved_special_token_%d|>" % i for i in range(10)]

WORDS = ("the quick brown fox jumps over a lazy dog while tokenizer models learn merges from text "
         "streams of bytes and characters in many languages with numbers code and symbols").split()
SENTENCES = [
    "I'm sure we'll see they've done it, and you're right: it's what he'd do.",
    "DON'T SHOUT! I'LL BE THERE. We'RE fine, THEY'VE gone.",
    "def main(args):\n    return [x * 2 for x in range(10) if x % 3 == 0]\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "Prices: $1234.56, 7%, 3.14159, 1,000,000 and 2024-06-01T12:30:00Z.",
    "Ünïcödé façade naïve café — résumé, Straße, Ελληνικά, русский текст.",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "Emoji: 😀 😂 👍🏽 👨‍👩‍👧‍👦 🇺🇸 ❤️ 🎉🎉🎉",
    "   leading spaces, trailing spaces   \n\n\nblank lines\r\nwindows line\ttabs\t\there",
    "नमस्ते दुनिया, مرحبا بالعالم، שלום עולם",
    "x² + y³ = z½; Ⅻ o'clock; ١٢٣٤٥ ٦٧٨",
    "https://example.com/path?query=value&other=1#anchor",
    "<html><body class=\"main\">Hello &amp; welcome</body></html>",
]


SYLLABLES = ("ka ri to mo na sel ven tra lor gis pha qu ex ion ment ing er ly al ist ous ch sh th "
             "über zé ño ß λο γο ще ни").split()


def corpus():
    rng = random.Random(1234)
    lines = []
    # Made-up words give the trainer enough distinct pairs to reach --vocab-size.
    for _ in range(6000):
        words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
                 for _ in range(rng.randint(2, 10))]
        lines.append(" ".join(words) + rng.choice([".", ",", "", "\n", "  ", "'s", "'ll"]))
    for _ in range(3000):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        lines.append(" ".join(words) + rng.choice([".", ",", "!", "?", ":", ""]))
        if rng.random() < 0.2:
            lines.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
    for _ in range(40):
        lines.extend(SENTENCES)
    return lines


def build(vocab_size):
    bpe = models.BPE(ignore_merges=True)
    tok = Tokenizer(bpe)
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(corpus(), trainer=trainer)
    # Training may hand back a new model object: make sure the trained one ignores merges.
    ignore_merges = True
    try:
        tok.model.ignore_merges = True
    except Exception as e:  # noqa: BLE001 - older tokenizers: note it and go on
        ignore_merges = False
        print("note: could not set ignore_merges on the BPE model: %r" % (e,))
    # Added after training, so they take the ids after the trained vocabulary, as in Llama 3.
    tok.add_special_tokens(SPECIAL_TOKENS)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
        special_tokens=[("<|begin_of_text|>", bos)])
    return tok, ignore_merges


CASES = [
    "", " ", "  ", "   ", "\n", "\n\n\n", "\t", " \t \n ", "\r\n", "a\r\nb\r\n\r\nc",
    "Hello world", "Hello, world!", "  leading", "trailing   ", "trailing \n", "a  b   c    d",
    "I'M we'll", "I'm sure we'll see they've done it", "DON'T", "it'S", "x's 't 're", "'ll've'd",
    "1234567", "12 345 6789 0", "3.14159", "1,000,000", "v1.2.3-rc4", "$1234.56 and 7%",
    "٣٤٥٦٧", "x²³ ½ Ⅻ", "ſtop 'ſ",
    "Ünïcödé façade naïve café", "e\u0301 n\u0303 a\u0308\u0301", "Straße ΣΊΣΥΦΟΣ",
    "日本語のテキスト", "中文文本，还有标点。", "한국어 문장", "नमस्ते दुनिया", "مرحبا بالعالم",
    "😀", "😀😂👍🏽", "👨‍👩‍👧‍👦 family", "🇺🇸🇯🇵", "❤️ love", "🎉🎉🎉!!!",
    "mixed 日本 text 😀 with 123 numbers",
    "<|begin_of_text|>", "<|begin_of_text|>Hello", "Hi<|end_of_text|>there", "<|eot_id|><|eot_id|>",
    "a <|begin_of_text|> b", "<|begin_of_text|", "<|unknown_token|>", "<|reserved_special_token_3|>x",
    "def f(x):\n    return x ** 2\n", "if (a && b) { c(); }\n\t\treturn;", "<html>&amp;</html>",
    "nbsp\u00a0here", "ideographic\u3000space", "nel\u0085line", "vt\u000bff\u000c", "ls\u2028ps\u2029",
    "zero\u200bwidth", "tab\tafter\t", "!!!???...", "a-b_c.d/e\\f", "\"quoted\" 'single'",
    # Runs that tell Unicode \s from ASCII \s, and Unicode case folding in (?i:'s|...).
    "a\u00a0\u00a01", "x\u3000\u3000y", "\u0085\u0085z", "p\u2028\u20281", "it'\u017ft we'\u212aa",
    "line\n\n  \n x", "   \n\t\n  end", "1\n2\r\n3",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-size", type=int, default=3000)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tok, ignore_merges = build(args.vocab_size)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    # Encode with the saved file, which is what the Java side reads.
    tok = Tokenizer.from_file(os.path.join(args.out, "tokenizer.json"))
    cases = []
    for text in CASES:
        ids = tok.encode(text, add_special_tokens=True).ids
        ids_plain = tok.encode(text, add_special_tokens=False).ids
        cases.append({
            "text": text,
            "ids": ids,
            "ids_plain": ids_plain,
            "decoded": tok.decode(ids, skip_special_tokens=False),
            "decoded_skip": tok.decode(ids, skip_special_tokens=True),
        })
    with open(os.path.join(args.out, "tokenizer_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "ignore_merges": ignore_merges,
                   "vocab_size": tok.get_vocab_size(with_added_tokens=True), "cases": cases},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %d cases, vocab %d, tokenizers %s, ignore_merges %s"
          % (len(cases), tok.get_vocab_size(with_added_tokens=True), tokenizers.__version__, ignore_merges))


if __name__ == "__main__":
    main()
