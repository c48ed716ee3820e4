#!/usr/bin/env python3
"""A traced run killed with kill -9: every token it had shown must have its step in the trace on
disk (the CPU's contract: only the step in flight is lost). Reads the killed run's .partial (cut
back to its last whole step, as minfer-trace does) and its stdout (the prompt, then the tokens as
shown), turns each recorded step's chosen token into its bytes with the model's tokenizer.json,
and counts how many tokens the shown bytes hold. Prints one line; exit 1 when a shown token has
no step on disk or the shown bytes are not the recorded tokens'.
  kill_check.py PARTIAL STDOUT PROMPT TOKENIZER_JSON"""
import json
import sys

OPEN_TAIL = b'\n],"complete":false}\n'


def steps_on_disk(path):
    data = open(path, "rb").read()
    try:
        return json.loads(data)["steps"]
    except ValueError:
        cut = data.rfind(b"\n{")  # every step, and nothing else, starts with "\n{"
        head = data[:cut].rstrip(b",")
        return json.loads(head + OPEN_TAIL)["steps"]


def token_bytes(tokenizer_path):
    t = json.load(open(tokenizer_path, encoding="utf-8"))
    # Byte-level BPE: each byte is written as one printable character (the GPT-2 table).
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    byte_of = {chr(c): b for b, c in zip(printable, chars)}
    out = {i: bytes(byte_of[c] for c in s) for s, i in t["model"]["vocab"].items()}
    for a in t.get("added_tokens", []):
        out[a["id"]] = a["content"].encode()
    return out


def main():
    partial, stdout, prompt, tok = sys.argv[1:5]
    steps = steps_on_disk(partial)
    chosen = [s["logits"]["chosen"] for s in steps if s.get("logits")]
    shown = open(stdout, "rb").read()
    if not shown.startswith(prompt.encode()):
        print("kill check: stdout does not start with the prompt")
        return 1
    shown = shown[len(prompt.encode()):]
    tb = token_bytes(tok)
    recorded = b""
    k = 0
    while k < len(chosen) and len(recorded) < len(shown):
        recorded += tb[chosen[k]]
        k += 1
    ok = recorded[: len(shown)] == shown and len(recorded) >= len(shown)
    print(f"kill check: {len(steps)} steps on disk, {len(shown)} bytes shown = {k} tokens "
          f"({'every shown token recorded' if ok else 'a shown token is MISSING from the trace'}; "
          f"{len(steps) - k} recorded step(s) not shown yet)")
    return 0 if ok else 1


sys.exit(main())
