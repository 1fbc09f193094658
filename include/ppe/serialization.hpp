#pragma once
/// \file
/// Conversion of `ppe::State` to and from LibTorch's `c10::IValue`, and the
/// pickle byte format that Python's `torch.load` reads (`torch::pickle_save`).
///
/// Integrity: `pickle_dumps` seals what it writes with a CRC-32 of the whole
/// archive, kept in the zip archive's comment (the last bytes of the file,
/// `ppe-crc32:<8 hex digits>`; zip readers, Python's `torch.load` included,
/// ignore comments). `pickle_loads` verifies the seal when there is one, so a
/// corrupted file is an error naming the file instead of wrong numbers, and a
/// truncated file (which loses the archive's end record) is one as well.
/// Files without a seal (Python's `torch.save`) load unverified.

#include <ATen/core/ivalue.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/unpickler.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/state.hpp"

namespace ppe {

/// The IValue form of a State: dictionaries become `Dict[str, Any]` (insertion
/// order kept), lists `List[Any]`, tensors stay tensors.
inline c10::IValue to_ivalue(const State& s) {
  switch (s.kind()) {
    case State::Kind::None: return c10::IValue();
    case State::Kind::Bool: return c10::IValue(s.as_bool());
    case State::Kind::Int: return c10::IValue(s.as_int());
    case State::Kind::Double: return c10::IValue(s.as_double());
    case State::Kind::String: return c10::IValue(s.as_string());
    case State::Kind::Tensor: return c10::IValue(s.as_tensor());
    case State::Kind::List: {
      c10::impl::GenericList list(c10::AnyType::get());
      list.reserve(s.as_list().size());
      for (const auto& item : s.as_list()) list.push_back(to_ivalue(item));
      return c10::IValue(std::move(list));
    }
    case State::Kind::Dict: {
      if (s.has_int_keys()) {
        c10::impl::GenericDict dict(c10::IntType::get(), c10::AnyType::get());
        for (const auto& [k, v] : s.as_dict()) dict.insert(c10::IValue(static_cast<std::int64_t>(std::stoll(k))), to_ivalue(v));
        return c10::IValue(std::move(dict));
      }
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : s.as_dict()) dict.insert(k, to_ivalue(v));
      return c10::IValue(std::move(dict));
    }
  }
  throw StateError("ppe::to_ivalue: unknown state kind");
}

/// The State form of an IValue. Tuples become lists; dictionary keys must be
/// strings or integers. A dictionary whose keys are all integers (or typed
/// `Dict[int, ...]`) becomes a `State::int_dict()`; in a dictionary that mixes
/// both, integer keys become their decimal text.
inline State from_ivalue(const c10::IValue& v) {
  if (v.isNone()) return State();
  if (v.isBool()) return State(v.toBool());
  if (v.isInt()) return State(v.toInt());
  if (v.isDouble()) return State(v.toDouble());
  if (v.isString()) return State(v.toStringRef());
  if (v.isTensor()) return State(v.toTensor());
  if (v.isList()) {
    State::List out;
    for (const c10::IValue& item : v.toListRef()) out.push_back(from_ivalue(item));
    return State(std::move(out));
  }
  if (v.isTuple()) {
    State::List out;
    for (const c10::IValue& item : v.toTupleRef().elements()) out.push_back(from_ivalue(item));
    return State(std::move(out));
  }
  if (v.isGenericDict()) {
    const auto dict = v.toGenericDict();
    bool int_keys = dict.keyType()->kind() == c10::TypeKind::IntType || !dict.empty();
    for (const auto& entry : dict) int_keys = int_keys && entry.key().isInt();
    State out = int_keys ? State::int_dict() : State::dict();
    for (const auto& entry : dict) {
      const c10::IValue& key = entry.key();
      if (key.isString())
        out.set(key.toStringRef(), from_ivalue(entry.value()));
      else if (key.isInt())
        out.set(std::to_string(key.toInt()), from_ivalue(entry.value()));
      else
        throw StateError("ppe::from_ivalue: dictionary key of type " + key.tagKind() +
                         " is not supported (expected str or int)");
    }
    return out;
  }
  throw StateError("ppe::from_ivalue: value of type " + v.tagKind() + " has no ppe::State form");
}

/// A file (or buffer) that is not a readable pickle archive: truncated,
/// corrupted (its checksum does not match) or not an archive at all. The
/// message names the file and says which.
class CorruptFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// A zip archive ends with its end-of-central-directory record: 22 bytes
// starting with this signature, the last two holding the comment's length.
inline constexpr char kZipEndSignature[4] = {'P', 'K', '\x05', '\x06'};
inline constexpr std::size_t kZipEndSize = 22;
inline constexpr std::string_view kSealTag = "ppe-crc32:";
inline constexpr std::size_t kSealSize = 18;  // tag + 8 hex digits

inline std::uint32_t crc32_update(std::uint32_t crc, const char* p, std::size_t n) {
  uLong c = crc;
  while (n > 0) {  // zlib takes at most a uInt per call
    const uInt k = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    c = ::crc32(c, reinterpret_cast<const Bytef*>(p), k);
    p += k;
    n -= k;
  }
  return static_cast<std::uint32_t>(c);
}

/// The CRC-32 of the archive as it was before sealing: the bytes up to the
/// comment, with the comment length read as 0.
inline std::uint32_t unsealed_crc(const char* p, std::size_t archive_size) {
  const char zero[2] = {0, 0};
  return crc32_update(crc32_update(0, p, archive_size - 2), zero, 2);
}

inline std::string hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

/// Appends the seal to an archive written by `torch::pickle_save` (whose
/// comment is empty).
inline void seal(std::vector<char>& zip) {
  const std::size_t n = zip.size();
  if (n < kZipEndSize || !std::equal(kZipEndSignature, kZipEndSignature + 4, zip.data() + n - kZipEndSize) ||
      zip[n - 2] != 0 || zip[n - 1] != 0)
    throw std::logic_error("ppe::pickle_dumps: LibTorch's archive does not end with an empty zip comment");
  const std::string comment = std::string(kSealTag) + hex8(unsealed_crc(zip.data(), n));
  zip[n - 2] = static_cast<char>(kSealSize & 0xff);
  zip[n - 1] = static_cast<char>(kSealSize >> 8);
  zip.insert(zip.end(), comment.begin(), comment.end());
}

/// Checks the end of `bytes` (read from `source`): either a sealed archive
/// whose checksum matches (returns true) or an archive with an empty comment,
/// as `torch.save` writes (returns false: unverified). Anything else is
/// truncated or no archive, and a sealed archive whose checksum differs is
/// corrupted: both throw CorruptFileError. (The archive reader alone would
/// accept a file that lost a few bytes of its end.)
inline bool verify_seal(const std::vector<char>& bytes, std::string_view source) {
  const std::size_t n = bytes.size();
  auto end_record_at = [&](std::size_t comment_size) {
    if (n < kZipEndSize + comment_size) return false;
    const char* r = bytes.data() + n - comment_size - kZipEndSize;
    return std::equal(kZipEndSignature, kZipEndSignature + 4, r) &&
           static_cast<unsigned char>(r[20]) == (comment_size & 0xff) &&
           static_cast<unsigned char>(r[21]) == (comment_size >> 8);
  };
  if (end_record_at(kSealSize) &&
      std::string_view(bytes.data() + n - kSealSize, kSealTag.size()) == kSealTag) {
    const std::string stored(bytes.data() + n - kSealSize + kSealTag.size(), 8);
    const std::string computed = hex8(unsealed_crc(bytes.data(), n - kSealSize));
    if (stored != computed)
      throw CorruptFileError("ppe: " + std::string(source) + " is corrupted: its content has CRC-32 " + computed +
                             " but the file was written with " + stored);
    return true;
  }
  if (end_record_at(0)) return false;
  throw CorruptFileError("ppe: cannot read " + std::string(source) +
                         " (truncated, or not a file written by torch.save / ppe::pickle_dumps): it does not end "
                         "with the end record of a zip archive (" + std::to_string(n) + " bytes)");
}

}  // namespace detail

/// Pickle bytes of a State, readable by Python's `torch.load`, sealed with a
/// checksum (see the file comment).
inline std::vector<char> pickle_dumps(const State& s) {
  std::vector<char> bytes = torch::jit::pickle_save(to_ivalue(s));
  detail::seal(bytes);
  return bytes;
}

namespace detail {

/// Rewrites a Python pickle program (protocol 2 or 3, as `torch.save` writes
/// it) into the subset LibTorch 1.13's C++ unpickler reads, or returns nullopt
/// when nothing needs rewriting or the program has an opcode this does not
/// know (LibTorch then reports the problem itself). The C++ unpickler lacks
/// APPEND and SETITEM (Python's encoding of one-element lists and one-item
/// dicts), reads `collections.OrderedDict()` (every `state_dict()`) as None,
/// and cannot apply BUILD to a dict. So:
///  - `item APPEND` becomes `MARK item APPENDS`, `key value SETITEM` becomes
///    `MARK key value SETITEMS`;
///  - `OrderedDict () REDUCE` becomes `EMPTY_DICT`;
///  - `state BUILD` on such a dict is dropped with its state (an OrderedDict's
///    state is its attributes, e.g. a state_dict's `_metadata`).
/// Memo slots written inside dropped code must not be read outside it, else
/// nullopt.
inline std::optional<std::string> rewrite_python_pickle(std::string_view in) {
  enum Tag : std::uint8_t { kValue, kMark, kOrderedDictClass, kOrderedDict };
  struct Entry {
    std::size_t start;  // output offset where the code pushing it begins
    Tag tag;
  };
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  std::vector<Entry> stack;
  std::vector<std::pair<std::size_t, Tag>> memo_tags;  // (slot, tag) for tagged slots
  std::vector<std::pair<std::size_t, std::size_t>> puts;  // (output offset, slot)
  std::vector<std::size_t> dropped;                         // slots written by dropped code
  std::vector<std::size_t> dropped_reads;                   // output offsets reading a dropped slot
  bool changed = false;
  std::size_t i = 0;

  auto le = [&](std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int b = bytes - 1; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(b)]);
    return static_cast<std::size_t>(v);
  };
  auto line_end = [&](std::size_t from) { return in.find('\n', from); };
  auto pop_to_mark = [&]() -> std::optional<std::size_t> {
    for (std::size_t k = stack.size(); k-- > 0;)
      if (stack[k].tag == kMark) {
        const std::size_t start = stack[k].start;
        stack.resize(k);
        return start;
      }
    return std::nullopt;
  };
  auto memo_tag = [&](std::size_t slot) {
    for (const auto& [s, t] : memo_tags)
      if (s == slot) return t;
    return kValue;
  };
  auto set_memo_tag = [&](std::size_t slot, Tag t) {
    for (auto& [s, old] : memo_tags)
      if (s == slot) {
        old = t;
        return;
      }
    if (t != kValue) memo_tags.emplace_back(slot, t);
  };
  // Drops the output from `from` on: its memo writes become dropped slots.
  auto truncate = [&](std::size_t from) {
    for (auto it = puts.begin(); it != puts.end();)
      if (it->first >= from) {
        dropped.push_back(it->second);
        it = puts.erase(it);
      } else {
        ++it;
      }
    std::erase_if(dropped_reads, [&](std::size_t at) { return at >= from; });
    out.resize(from);
    changed = true;
  };
  // Inserts a MARK at output offset `at`.
  auto insert_mark = [&](std::size_t at) {
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), '(');
    for (auto& [pos, slot] : puts)
      if (pos >= at) ++pos;
    for (auto& pos : dropped_reads)
      if (pos >= at) ++pos;
    changed = true;
  };

  while (i < in.size()) {
    const std::size_t op_at = i;
    const char op = in[i++];
    std::size_t arg = 0;  // argument bytes after the opcode
    auto need = [&](std::size_t n) { return i + n <= in.size(); };
    switch (op) {
      // Opcodes whose argument has a fixed size or a length prefix, pushing one value.
      case 'N': case '\x88': case '\x89': case '}': case ']': case ')':
        break;
      case 'K': case 'U': case 'C': case '\x8a':
        if (!need(1)) return std::nullopt;
        arg = (op == 'K') ? 1 : 1 + le(i, 1);
        break;
      case 'M': arg = 2; break;
      case 'J': arg = 4; break;
      case 'G': arg = 8; break;
      case 'X': case 'T': case 'B': case '\x8b':
        if (!need(4)) return std::nullopt;
        arg = 4 + le(i, 4);
        break;
      case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': {
        const std::size_t e = line_end(i);
        if (e == std::string_view::npos) return std::nullopt;
        arg = e + 1 - i;
        break;
      }
      case 'c': {
        const std::size_t e1 = line_end(i);
        const std::size_t e2 = e1 == std::string_view::npos ? e1 : line_end(e1 + 1);
        if (e2 == std::string_view::npos) return std::nullopt;
        arg = e2 + 1 - i;
        break;
      }
      case '\x80':
        if (!need(1) || static_cast<unsigned char>(in[i]) > 3) return std::nullopt;  // FRAMEs from protocol 4
        arg = 1;
        break;
      case 'q': case 'h': arg = 1; break;
      case 'r': case 'j': arg = 4; break;
      case 'p': case 'g': {
        const std::size_t e = line_end(i);
        if (e == std::string_view::npos) return std::nullopt;
        arg = e + 1 - i;
        break;
      }
      case '(': case '.': case 'a': case 's': case 'e': case 'u': case 't': case 'l': case 'd':
      case '\x85': case '\x86': case '\x87': case 'R': case 'b': case 'Q': case '\x81': case '0': case '1':
      case '2':
        break;
      default: return std::nullopt;  // protocol 4/5 or unknown: leave it to LibTorch
    }
    if (!need(arg)) return std::nullopt;
    const std::string_view code = in.substr(op_at, 1 + arg);
    i += arg;
    const std::size_t here = out.size();
    auto top = [&](std::size_t from_top) -> Entry* {
      return stack.size() > from_top ? &stack[stack.size() - 1 - from_top] : nullptr;
    };

    switch (op) {
      case '.':
        out += code;
        if (!dropped_reads.empty()) return std::nullopt;
        return changed ? std::optional<std::string>(std::move(out)) : std::nullopt;
      case '(':
        stack.push_back({here, kMark});
        out += code;
        break;
      case 'c': {
        const bool od = code.substr(1) == "collections\nOrderedDict\n";
        stack.push_back({here, od ? kOrderedDictClass : kValue});
        out += code;
        break;
      }
      case 'q': case 'r': case 'p': {
        const std::size_t slot = op == 'p' ? std::stoul(std::string(code.substr(1))) : le(op_at + 1, op == 'q' ? 1 : 4);
        if (stack.empty()) return std::nullopt;
        set_memo_tag(slot, stack.back().tag == kMark ? kValue : stack.back().tag);
        std::erase(dropped, slot);
        puts.emplace_back(here, slot);
        out += code;
        break;
      }
      case 'h': case 'j': case 'g': {
        const std::size_t slot = op == 'g' ? std::stoul(std::string(code.substr(1))) : le(op_at + 1, op == 'h' ? 1 : 4);
        if (std::find(dropped.begin(), dropped.end(), slot) != dropped.end()) dropped_reads.push_back(here);
        stack.push_back({here, memo_tag(slot)});
        out += code;
        break;
      }
      case 'a': {  // list item APPEND -> list MARK item APPENDS
        Entry* item = top(0);
        if (!item || !top(1)) return std::nullopt;
        const std::size_t at = item->start;
        stack.pop_back();
        insert_mark(at);
        out += 'e';
        break;
      }
      case 's': {  // dict key value SETITEM -> dict MARK key value SETITEMS
        Entry* key = top(1);
        if (!key || !top(2)) return std::nullopt;
        const std::size_t at = key->start;
        stack.resize(stack.size() - 2);
        insert_mark(at);
        out += 'u';
        break;
      }
      case 'e': case 'u': case '1':
        if (!pop_to_mark()) return std::nullopt;
        out += code;
        break;
      case 't': case 'l': case 'd': {
        const auto start = pop_to_mark();
        if (!start) return std::nullopt;
        stack.push_back({*start, kValue});
        out += code;
        break;
      }
      case '\x85': case '\x86': case '\x87': {
        const std::size_t n = static_cast<std::size_t>(op - '\x84');
        if (stack.size() < n) return std::nullopt;
        const std::size_t start = stack[stack.size() - n].start;
        stack.resize(stack.size() - n);
        stack.push_back({start, kValue});
        out += code;
        break;
      }
      case 'R': case '\x81': {  // callable args REDUCE
        if (stack.size() < 2) return std::nullopt;
        const Entry callable = stack[stack.size() - 2];
        stack.resize(stack.size() - 2);
        if (op == 'R' && callable.tag == kOrderedDictClass) {
          truncate(callable.start);
          stack.push_back({callable.start, kOrderedDict});
          out += '}';
        } else {
          stack.push_back({callable.start, kValue});
          out += code;
        }
        break;
      }
      case 'b': {  // object state BUILD
        if (stack.size() < 2) return std::nullopt;
        const Entry state = stack.back();
        stack.pop_back();
        if (stack.back().tag == kOrderedDict) {
          truncate(state.start);
        } else {
          out += code;
        }
        break;
      }
      case 'Q':
        if (stack.empty()) return std::nullopt;
        stack.back().tag = kValue;
        out += code;
        break;
      case '0':
        if (stack.empty()) return std::nullopt;
        stack.pop_back();
        out += code;
        break;
      case '2':
        if (stack.empty()) return std::nullopt;
        stack.push_back({here, stack.back().tag});
        out += code;
        break;
      case '\x80':
        out += code;
        break;
      default:  // values
        stack.push_back({here, kValue});
        out += code;
        break;
    }
  }
  return std::nullopt;  // no STOP
}

}  // namespace detail

namespace detail {

inline State pickle_loads_unchecked(const std::vector<char>& bytes) {
  caffe2::serialize::PyTorchStreamReader reader(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
  std::optional<std::string> program;
  if (reader.hasRecord("data.pkl")) {
    auto [data, size] = reader.getRecord("data.pkl");
    program = detail::rewrite_python_pickle(std::string_view(static_cast<const char*>(data.get()), size));
  }
  if (!program) return from_ivalue(torch::jit::pickle_load(bytes));
  std::size_t pos = 0;
  auto read = [&](char* buffer, std::size_t n) {
    const std::size_t k = std::min(n, program->size() - pos);
    std::memcpy(buffer, program->data() + pos, k);
    pos += k;
    return k;
  };
  auto read_record = [&reader](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::nullopt);
  unpickler.set_version(reader.version());
  return from_ivalue(unpickler.parse_ivalue());
}

}  // namespace detail

/// The State stored in pickle bytes written by `pickle_dumps` or Python's
/// `torch.save` (including `state_dict()`s and PPE snapshots: the parts of
/// Python's pickle encoding that LibTorch's reader lacks are rewritten first,
/// see detail::rewrite_python_pickle). A seal is verified first. Bytes that
/// are no readable archive (truncated, corrupted, something else) raise
/// CorruptFileError naming `source` (a file name, for messages).
inline State pickle_loads(const std::vector<char>& bytes, std::string_view source = "the pickle data") {
  const bool sealed = detail::verify_seal(bytes, source);
  try {
    return detail::pickle_loads_unchecked(bytes);
  } catch (const StateError&) {
    throw;  // readable, but holds something a State cannot
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // LibTorch appends a C++ stack trace
    throw CorruptFileError("ppe: cannot read " + std::string(source) +
                           (sealed ? "" : " (truncated, or not a file written by torch.save / ppe::pickle_dumps)") +
                           ": " + what);
  }
}

/// The bytes of a file; a std::runtime_error naming the file when it cannot
/// be read.
inline std::vector<char> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("ppe: cannot open " + path.string() + " for reading");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("ppe: reading " + path.string() + " failed");
  return bytes;
}

/// The State in a file written by `pickle_dumps` (through any writer) or by
/// Python's `torch.save`: Python's `torch.load(path, map_location="cpu")`.
inline State load_file(const std::filesystem::path& path) { return pickle_loads(read_file_bytes(path), path.string()); }

/// A copy of `s` that nothing else can change: every tensor whose data or
/// TensorImpl anything else still references (e.g. a model's parameters, held
/// by `detach()`ed handles) is cloned; tensors only this state holds (e.g. the
/// clones an optimizer state already made) are shared, not copied again.
/// What an asynchronous snapshot keeps while training goes on.
inline State owned_copy(const State& s) {
  switch (s.kind()) {
    case State::Kind::Tensor: {
      const at::Tensor& t = s.as_tensor();
      const bool sole = !t.defined() || (t.use_count() == 1 && t.storage().use_count() == 1);
      return sole ? s : State(t.detach().clone());
    }
    case State::Kind::List: {
      State::List out;
      out.reserve(s.as_list().size());
      for (const auto& item : s.as_list()) out.push_back(owned_copy(item));
      return State(std::move(out));
    }
    case State::Kind::Dict: {
      State out = s.has_int_keys() ? State::int_dict() : State::dict();
      out.as_dict().reserve(s.as_dict().size());
      for (const auto& [k, v] : s.as_dict()) out.as_dict().emplace_back(k, owned_copy(v));
      return out;
    }
    default: return s;
  }
}

/// Deep equality that compares tensors by dtype, shape and values.
inline bool state_equal(const State& a, const State& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case State::Kind::Tensor: {
      const at::Tensor& x = a.as_tensor();
      const at::Tensor& y = b.as_tensor();
      return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() && x.equal(y);
    }
    case State::Kind::List: {
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!state_equal(x[i], y[i])) return false;
      return true;
    }
    case State::Kind::Dict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i].first != y[i].first || !state_equal(x[i].second, y[i].second)) return false;
      return true;
    }
    default: return a == b;
  }
}

}  // namespace ppe
