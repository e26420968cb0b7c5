"""A SentencePiece tokenizer built from a GGUF file's vocabulary (``tokenizer.ggml.*``).

Encoding runs the ``sentencepiece`` library on a model made from the GGUF's tokens,
scores and token types (the SentencePiece BPE algorithm: pieces merge by score, unknown
characters fall back to the ``<0xXX>`` byte pieces), so the merge algorithm is the
library's, not ours. What the library cannot know is done here, the way llama.cpp does
it, so the ids are llama.cpp's:

* user-defined tokens (runs of newlines or spaces, ...) are split out of the raw text
  before spaces are escaped (their text holds plain spaces), longest token first; control
  tokens (``<start_of_turn>``, ...) too when ``special=True``;
* no dummy space prefix (``tokenizer.ggml.add_space_prefix``), BOS per
  ``tokenizer.ggml.add_bos_token``.

Decoding is a table of each token's bytes (``▁`` -> space, ``<0xXX>`` -> that byte,
control tokens -> nothing), so a stream of tokens turns into text byte for byte.
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.errors import NinferError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "\u2581"


class TokenizerError(NinferError):
    """The GGUF's vocabulary cannot make a SentencePiece tokenizer."""


class Tokenizer:
    """Encode and decode with a GGUF file's SentencePiece vocabulary."""

    def __init__(self, gguf):
        md = gguf.metadata
        model = md.get("tokenizer.ggml.model")
        if model != "llama":
            raise TokenizerError(f"tokenizer.ggml.model is {model!r}: only SentencePiece "
                                 f"('llama') vocabularies are supported")
        try:
            import sentencepiece as spm
            from sentencepiece import sentencepiece_model_pb2 as pb
        except ImportError:
            raise ImportError("the tokenizer needs the 'sentencepiece' and 'protobuf' "
                              "packages (pip install sentencepiece protobuf)") from None
        self.pieces = gguf.string_array("tokenizer.ggml.tokens")
        self.scores = np.asarray(gguf.array("tokenizer.ggml.scores"), np.float32)
        self.types = np.asarray(gguf.array("tokenizer.ggml.token_type"), np.int32)
        n = len(self.pieces)
        if self.scores.size != n or self.types.size != n:
            raise TokenizerError(f"{n} tokens but {self.scores.size} scores and "
                                 f"{self.types.size} token types")
        self.bos_id = int(md.get("tokenizer.ggml.bos_token_id", 2))
        self.eos_id = int(md.get("tokenizer.ggml.eos_token_id", 1))
        self.unk_id = int(md.get("tokenizer.ggml.unknown_token_id", 3))
        self.pad_id = int(md.get("tokenizer.ggml.padding_token_id", -1))
        self.add_bos = bool(md.get("tokenizer.ggml.add_bos_token", True))
        self.add_eos = bool(md.get("tokenizer.ggml.add_eos_token", False))
        if md.get("tokenizer.ggml.add_space_prefix", False):
            raise TokenizerError("vocabularies with a dummy space prefix are not supported")

        proto = pb.ModelProto()
        proto.trainer_spec.model_type = pb.TrainerSpec.BPE
        proto.trainer_spec.vocab_size = n
        proto.trainer_spec.byte_fallback = True
        proto.trainer_spec.unk_id = self.unk_id
        proto.trainer_spec.bos_id = self.bos_id
        proto.trainer_spec.eos_id = self.eos_id
        proto.trainer_spec.pad_id = self.pad_id
        ns = proto.normalizer_spec
        ns.name, ns.add_dummy_prefix = "identity", False
        ns.remove_extra_whitespaces, ns.escape_whitespaces = False, True
        types = self.types.copy()
        types[self.unk_id] = UNKNOWN                # the library needs exactly one
        for i in np.flatnonzero((types == UNKNOWN) & (np.arange(n) != self.unk_id)):
            types[i] = CONTROL
        for text, score, kind in zip(self.pieces, self.scores.tolist(), types.tolist()):
            p = proto.pieces.add()
            p.piece, p.score, p.type = text, score, kind
        self._sp = spm.SentencePieceProcessor()
        try:
            self._sp.LoadFromSerializedProto(proto.SerializeToString())
        except Exception as e:                       # noqa: BLE001 - the library's check
            raise TokenizerError(f"sentencepiece refused the vocabulary: {e}") from None

        ids = np.arange(n)
        self._user = sorted((i for i in ids[self.types == USER_DEFINED]),
                            key=lambda i: -len(self.pieces[i]))
        self._control = sorted((i for i in ids[self.types == CONTROL] if self.pieces[i]),
                               key=lambda i: -len(self.pieces[i]))
        self._bytes = self._byte_table()

    def _byte_table(self) -> list[bytes]:
        out = []
        for text, kind in zip(self.pieces, self.types.tolist()):
            if kind == BYTE and len(text) == 6 and text.startswith("<0x"):
                out.append(bytes([int(text[3:5], 16)]))
            elif kind in (CONTROL, UNKNOWN, UNUSED):
                out.append(b"")
            else:
                out.append(text.replace(SPACE, " ").encode("utf-8"))
        return out

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    # --- encode ---------------------------------------------------------------------
    def _partition(self, text: str, special: bool) -> list:
        """``text`` split into raw strings and token ids of the special tokens found in
        it, each token in turn from the longest, over the fragments not yet split."""
        parts: list = [text]
        for tid in (self._control + self._user if special else self._user):
            piece = self.pieces[tid]
            out = []
            for part in parts:
                if not isinstance(part, str) or piece not in part:
                    out.append(part)
                    continue
                start = 0
                while True:
                    at = part.find(piece, start)
                    if at < 0:
                        break
                    if at > start:
                        out.append(part[start:at])
                    out.append(int(tid))
                    start = at + len(piece)
                if start < len(part):
                    out.append(part[start:])
            parts = out
        return parts

    def encode(self, text: str, add_bos: bool | None = None, special: bool = False) -> list[int]:
        """Token ids of ``text`` (BOS first per the GGUF unless ``add_bos`` says);
        with ``special=True`` control-token text such as ``<start_of_turn>`` becomes
        that token."""
        ids = [self.bos_id] if (self.add_bos if add_bos is None else add_bos) else []
        for part in self._partition(text, special):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(self._sp.EncodeAsIds(part))
        if self.add_eos:
            ids.append(self.eos_id)
        return ids

    # --- decode ---------------------------------------------------------------------
    def token_bytes(self, token: int) -> bytes:
        """The bytes token ``token`` stands for in text (b'' for control tokens)."""
        if not 0 <= token < len(self._bytes):
            raise TokenizerError(f"token id {token} is outside the vocabulary of "
                                 f"{len(self._bytes)}")
        return self._bytes[token]

    def decode(self, ids) -> str:
        """The text of ``ids`` (invalid UTF-8 from byte tokens is replaced)."""
        return b"".join(self.token_bytes(int(t)) for t in ids).decode("utf-8", "replace")


class StreamDecoder:
    """Turns tokens into text as they come: bytes are held back until they form
    whole UTF-8 characters."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer, self._pending = tokenizer, b""

    def push(self, token: int) -> str:
        data = self._pending + self.tokenizer.token_bytes(token)
        for cut in range(len(data), max(len(data) - 4, -1), -1):
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            self._pending = data[cut:]
            return text
        self._pending = b""
        return data.decode("utf-8", "replace")

    def flush(self) -> str:
        text, self._pending = self._pending.decode("utf-8", "replace"), b""
        return text
