#!/usr/bin/env python3
"""Draws the course's conceptual diagrams, in English and Korean, from `build/examples/diagrams`.

    scripts/draw_concepts.py DIAGRAMS.json [--images docs/images]

Writes, into IMAGES (English) and IMAGES/ko (Korean labels):
  transformer_encoder.png, transformer_lm.png, transformer.png
      the three Transformers as Trax builds them: every top-level layer of the model, the stack it
      leaves on the arrow below it (from a Trace of a real forward pass; sizes named B, L, d, …),
      and for each composite layer the leaves it runs, in order;
  attention_head.png   one attention head's data flow with its shapes;
  heads.png            splitting d_model into heads, attending per head, merging them back;
  shift_right.png      ShiftRight, the causal mask and the targets on a 5-token sentence;
  kv_cache.png         the first head's key cache after each of 5 decoded tokens (real values);
  beam_step.png        one beam-search step of a small character LM trained for the purpose.
Graphs are drawn by Graphviz's `dot`, plots by matplotlib (Debian: graphviz, python3-matplotlib,
fonts-noto-cjk for the Korean labels). No number is typed by hand: each comes from the JSON.
"""
import argparse
import json
import os
import re
import subprocess

KO_FONT = "Noto Sans CJK KR"   # Graphviz finds it through fontconfig
KO_FONT_MPL = "Noto Sans CJK JP"   # matplotlib reads the first face of the .ttc; it has Hangul too

TEXT = {
    "en": {
        "stack_note": "on each arrow: the whole stack after the layer above",
        "sizes": "B batch, L length{ld}, d d_model, d_ff, V vocabulary{c}, B·H rows × heads, d_head",
        "titles": {"TransformerEncoder": "TransformerEncoder (one block)", "TransformerLM": "TransformerLM (one block)",
                   "Transformer": "Transformer (one encoder and one decoder block)"},
        "residual": "Residual",
        "identity": "None (identity)",
        "head_title": "One attention head",
        "x": "x: the block's input", "scores": "scores = Q·Kᵀ / √d_head", "mask": "mask: −1e9 where false",
        "softmax": "softmax over keys", "weights": "attention weights", "out": "weighted sum of V",
        "heads_title": "Heads: split, attend, merge",
        "split": "SplitIntoHeads (reshape, transpose)", "per_head": "attention, every head at once",
        "merge": "MergeHeads (transpose, reshape)", "proj": "Dense: mix the heads",
        "tokens": "sentence", "input": "decoder input = ShiftRight(sentence)", "targets": "targets = sentence",
        "mask_title": "causal mask: query i sees keys 0…i", "query": "query (position, input token)", "key": "key",
        "shift_title": "Teacher forcing: the input is the sentence shifted right",
        "kv_title": "KV cache of the first head while decoding (keys; grey rows not yet filled)",
        "after": "after token {t}: filled {f}", "row": "cache row (position)", "col": "d_head",
        "beam_title": "One beam-search step (2 beams): extend each, keep the 2 best sums of log-probabilities",
        "kept": "kept", "dropped": "dropped", "score": "score",
    },
    "ko": {
        "stack_note": "화살표 위: 위 레이어를 지난 뒤의 스택 전체",
        "sizes": "B 배치, L 길이{ld}, d d_model, d_ff, V 어휘{c}, B·H 행×헤드, d_head",
        "titles": {"TransformerEncoder": "TransformerEncoder (블록 하나)", "TransformerLM": "TransformerLM (블록 하나)",
                   "Transformer": "Transformer (인코더 블록 하나, 디코더 블록 하나)"},
        "residual": "Residual",
        "identity": "None (항등)",
        "head_title": "어텐션 헤드 하나",
        "x": "x: 블록의 입력", "scores": "점수 = Q·Kᵀ / √d_head", "mask": "마스크: 거짓인 곳에 −1e9",
        "softmax": "키에 대한 softmax", "weights": "어텐션 가중치", "out": "V의 가중합",
        "heads_title": "헤드: 나누고, 어텐션하고, 합친다",
        "split": "SplitIntoHeads (reshape, transpose)", "per_head": "모든 헤드를 한꺼번에 어텐션",
        "merge": "MergeHeads (transpose, reshape)", "proj": "Dense: 헤드를 섞는다",
        "tokens": "문장", "input": "디코더 입력 = ShiftRight(문장)", "targets": "목표 = 문장",
        "mask_title": "인과 마스크: 쿼리 i는 키 0…i를 본다", "query": "쿼리 (위치, 입력 토큰)", "key": "키",
        "shift_title": "교사 강요: 입력은 오른쪽으로 민 문장",
        "kv_title": "디코딩 중 첫 헤드의 KV 캐시 (키; 회색 행은 아직 비어 있음)",
        "after": "토큰 {t} 뒤: 채운 행 {f}", "row": "캐시 행 (위치)", "col": "d_head",
        "beam_title": "빔 탐색 한 걸음 (빔 2개): 각 빔을 늘리고 로그 확률 합이 큰 2개를 남긴다",
        "kept": "남김", "dropped": "버림", "score": "점수",
    },
}

# The sizes examples/diagrams.cpp used, by name (B 3, L 7, target 5, d 16, d_ff 64, V 100, 4
# classes, 2 heads of 8).
SIZES = {"3": "B", "7": "L", "5": "L_d", "16": "d", "64": "d_ff", "100": "V", "4": "C", "6": "B·H", "8": "d_head"}


def symbolic(signature):
    """'(f32[3,7,16], bool[3,1,1,7])' → 'f32[B,L,d]\\nbool[B,1,1,L]'."""
    items = re.findall(r"\w+\[[^\]]*\]", signature)
    out = []
    for item in items:
        dtype, dims = item.split("[")
        dims = [SIZES.get(x, x) for x in dims.rstrip("]").split(",") if x]
        out.append(f"{dtype}[{','.join(dims)}]")
    return "\n".join(out)


def dot(source, path):
    subprocess.run(["dot", "-Tpng", "-Gdpi=110", "-o", path], input=source.encode(), check=True)


def esc(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')


def leaves(events, start, end):
    """The leaf layers executed in events[start:end] (no deeper event right after; combinator plumbing
    and None left out), runs of one name as "name ×n", in lines of about 70 characters."""
    runs = []
    for i in range(start, end):
        deeper = i + 1 < len(events) and events[i + 1]["depth"] > events[i]["depth"]
        name = events[i]["layer"]
        if deeper or name == "Serial" or re.match(r"(Select|Parallel|Branch)", name):
            continue
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    lines, line = [], ""
    for p in (n if k == 1 else f"{n} ×{k}" for n, k in runs):
        if line and len(line) + len(p) > 70:
            lines.append(line + " →")
            line = ""
        line = f"{line} → {p}" if line else p
    return lines + [line] if line else []


def model_graph(m, t, font):
    events = m["events"]
    top = [i for i, e in enumerate(events) if e["depth"] == 1]
    lines = ['digraph G { rankdir=TB; nodesep=0.3; ranksep=0.25;',
             f'graph [fontname="{font}", fontsize=16, labelloc=t, label="{esc(t["titles"][m["name"]])}\\n'
             f'{esc(t["stack_note"])}"];',
             f'node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="{font}", fontsize=11];',
             'edge [fontname="DejaVu Sans Mono", fontsize=9];',
             f'in [shape=plaintext, style="", label="{esc(symbolic(events[0]["before"]))}"];']
    prev = "in"
    for k, i in enumerate(top):
        end = top[k + 1] if k + 1 < len(top) else len(events)
        e = events[i]
        inner = leaves(events, i + 1, end)
        is_residual = any(ev["depth"] == 2 and ev["layer"].startswith("Add") for ev in events[i + 1:end]) and \
            any(ev["depth"] == 2 and ev["layer"].startswith("Branch") for ev in events[i + 1:end])
        title = e["layer"] if not (e["layer"] == "Serial" and not inner) else t["identity"]
        if is_residual:
            title = f'{title}  ({t["residual"]})'
            fill = "#fdf1dc"
        else:
            fill = "#eef3fb"
        label = "\\n".join(esc(x) for x in [title] + inner)   # Graphviz's line break
        lines.append(f'n{k} [label="{label}", fillcolor="{fill}"];')
        lines.append(f'{prev} -> n{k} [label="{esc(symbolic(events[i]["before"]))}"];' if prev != "in"
                     else f'{prev} -> n{k};')
        prev = f"n{k}"
    lines.append(f'out [shape=plaintext, style="", label="{esc(symbolic(events[0]["after"]))}"];')
    lines.append(f'{prev} -> out;')
    lines.append("}")
    return "\n".join(lines)


def attention_head_graph(t, font):
    return f'''digraph G {{ rankdir=TB; ranksep=0.3;
graph [fontname="{font}", fontsize=16, labelloc=t, label="{esc(t["head_title"])}"];
node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="{font}", fontsize=11];
edge [fontname="DejaVu Sans Mono", fontsize=10];
x [label="{esc(t["x"])}", fillcolor="#ffffff"];
wq [label="Dense W_Q"]; wk [label="Dense W_K"]; wv [label="Dense W_V"];
x -> wq [label="[L, d]"]; x -> wk [label="[L, d]"]; x -> wv [label="[L, d]"];
s [label="{esc(t["scores"])}", fillcolor="#fdf1dc"];
wq -> s [label="Q [L, d_head]"]; wk -> s [label="K [L, d_head]"];
m [label="{esc(t["mask"])}"]; s -> m [label="[L, L]"];
p [label="{esc(t["softmax"])}"]; m -> p [label="[L, L]"];
o [label="{esc(t["out"])}", fillcolor="#fdf1dc"];
p -> o [label="{esc(t["weights"])} [L, L]"]; wv -> o [label="V [L, d_head]"];
y [shape=plaintext, style="", label="[L, d_head]"]; o -> y;
}}'''


def heads_graph(t, font):
    return f'''digraph G {{ rankdir=TB; ranksep=0.3;
graph [fontname="{font}", fontsize=16, labelloc=t, label="{esc(t["heads_title"])}"];
node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="{font}", fontsize=11];
edge [fontname="DejaVu Sans Mono", fontsize=10];
q [shape=plaintext, style="", label="Q, K, V: [B, L, d]   (d = H · d_head)"];
s [label="{esc(t["split"])}"]; q -> s;
a [label="{esc(t["per_head"])}", fillcolor="#fdf1dc"]; s -> a [label="[B, L, H, d_head] → [B·H, L, d_head]"];
m [label="{esc(t["merge"])}"]; a -> m [label="[B·H, L, d_head]"];
d [label="{esc(t["proj"])}"]; m -> d [label="[B, L, H·d_head] = [B, L, d]"];
y [shape=plaintext, style="", label="[B, L, d]"]; d -> y;
}}'''


def beam_graph(b, t, font):
    beams = b["beams"]
    cands = []
    for bi, beam in enumerate(beams):
        for n in beam["next"]:
            cands.append((beam["score"] + n["log_prob"], bi, n))
    kept = set(sorted(range(len(cands)), key=lambda k: -cands[k][0])[:len(beams)])
    lines = ['digraph G { rankdir=LR; nodesep=0.15; ranksep=0.6;',
             f'graph [fontname="{font}", fontsize=15, labelloc=t, label="{esc(t["beam_title"])}"];',
             'node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=11];',
             'edge [fontname="DejaVu Sans Mono", fontsize=10];']
    for bi, beam in enumerate(beams):
        lines.append(f'b{bi} [label="\\"{esc(beam["text"])}\\"\\n{t["score"]} {beam["score"]:.2f}", fillcolor="#eef3fb"];')
    for k, (score, bi, n) in enumerate(cands):
        is_kept = k in kept
        text = beams[bi]["text"] + n["char"]
        fill = "#d9f2d9" if is_kept else "#eeeeee"
        mark = t["kept"] if is_kept else t["dropped"]
        lines.append(f'c{k} [label="\\"{esc(text)}\\"\\n{t["score"]} {score:.2f}  ({mark})", fillcolor="{fill}"'
                     f'{", fontcolor=gray40" if not is_kept else ""}];')
        lines.append(f'b{bi} -> c{k} [label="log p(\\"{esc(n["char"])}\\") = {n["log_prob"]:.2f}"];')
    lines.append("}")
    return "\n".join(lines)


def shift_figure(s, t, path, plt):
    tokens = s["tokens"]
    shifted = ["<0>"] + tokens[:-1]
    fig = plt.figure(figsize=(10, 4.2))
    ax = fig.add_axes([0.02, 0.1, 0.5, 0.75])
    ax.set_xlim(-0.5, 5.5)
    ax.set_ylim(-0.6, 3.6)
    ax.axis("off")
    rows = [(2.6, t["tokens"], tokens, s["ids"]), (1.4, t["input"], shifted, s["shifted"]),
            (0.2, t["targets"], tokens, s["ids"])]
    for y, name, words, ids in rows:
        ax.text(-0.45, y + 0.42, name, fontsize=10, ha="left")
        for i, (w, n) in enumerate(zip(words, ids)):
            ax.add_patch(plt.Rectangle((i - 0.45 + 0.5, y - 0.25), 0.9, 0.5, fill=True, color="#eef3fb", ec="#5577aa"))
            ax.text(i + 0.5, y, f"{w}\n{int(n)}", ha="center", va="center", fontsize=9)
    for i in range(5):   # position i's input predicts target i
        ax.annotate("", xy=(i + 0.5, 0.48), xytext=(i + 0.5, 1.12), arrowprops=dict(arrowstyle="->", color="#aa5522"))
    ax.set_title(t["shift_title"], fontsize=11, loc="left")
    ax2 = fig.add_axes([0.62, 0.14, 0.34, 0.7])
    ax2.imshow(s["causal"], cmap="Blues", vmin=0, vmax=1.6)
    ax2.set_xticks(range(5), shifted, fontsize=8)
    ax2.set_yticks(range(5), [f"{i}: {w}" for i, w in enumerate(shifted)], fontsize=8)
    ax2.set_xlabel(t["key"], fontsize=9)
    ax2.set_ylabel(t["query"], fontsize=9)
    for i in range(5):
        for j in range(5):
            ax2.text(j, i, "1" if s["causal"][i][j] else "0", ha="center", va="center", fontsize=8)
    ax2.set_title(t["mask_title"], fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def kv_figure(k, t, path, plt):
    steps = k["steps"]
    fig, axes = plt.subplots(1, len(steps), figsize=(2.3 * len(steps), 3.3), constrained_layout=True)
    vmax = max(abs(v) for s in steps for row in s["keys"] for v in row) or 1
    import numpy as np
    for ax, (i, s) in zip(axes, enumerate(steps)):
        keys = np.array(s["keys"], dtype=float)
        filled = int(s["filled"])
        shown = np.ma.masked_array(keys, mask=np.zeros_like(keys, dtype=bool))
        shown.mask[filled:, :] = True
        cmap = plt.get_cmap("coolwarm").copy()
        cmap.set_bad("#dddddd")
        im = ax.imshow(shown, cmap=cmap, vmin=-vmax, vmax=vmax, aspect="auto")
        ax.set_title(t["after"].format(t=i + 1, f=filled), fontsize=9)
        ax.set_xlabel(t["col"], fontsize=8)
        ax.set_yticks(range(k["max_len"]))
        if i == 0:
            ax.set_ylabel(t["row"], fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.suptitle(t["kv_title"], fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("diagrams")
    parser.add_argument("--images", default="docs/images")
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = json.load(open(args.diagrams, encoding="utf-8"))
    for lang, t in TEXT.items():
        folder = args.images if lang == "en" else os.path.join(args.images, "ko")
        os.makedirs(folder, exist_ok=True)
        font = "DejaVu Sans" if lang == "en" else KO_FONT
        matplotlib.rcParams["font.family"] = ["DejaVu Sans"] if lang == "en" else [KO_FONT_MPL, "DejaVu Sans"]
        files = {"TransformerEncoder": "transformer_encoder.png", "TransformerLM": "transformer_lm.png",
                 "Transformer": "transformer.png"}
        for m in d["models"]:
            dot(model_graph(m, t, font), os.path.join(folder, files[m["name"]]))
        dot(attention_head_graph(t, font), os.path.join(folder, "attention_head.png"))
        dot(heads_graph(t, font), os.path.join(folder, "heads.png"))
        dot(beam_graph(d["beam"], t, font), os.path.join(folder, "beam_step.png"))
        shift_figure(d["shift"], t, os.path.join(folder, "shift_right.png"), plt)
        kv_figure(d["kv_cache"], t, os.path.join(folder, "kv_cache.png"), plt)
        print(f"draw_concepts: 8 diagrams written to {folder}")


if __name__ == "__main__":
    main()
