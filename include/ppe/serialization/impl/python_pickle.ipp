// Definitions of serialization/python_pickle.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ppe/serialization/python_pickle.hpp"

namespace ppe::detail {

// ---- reading a program ---------------------------------------------------------

/// Little-endian unsigned integer of `bytes` bytes at `at` of `in`.
inline std::size_t pickle_le(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int b = bytes - 1; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(b)]);
  return static_cast<std::size_t>(v);
}

/// The length of the argument of `op` whose argument starts at `pos` (the
/// bytes after the opcode); nullopt for an opcode of protocol 4 or 5, an
/// unknown one, or a truncated length prefix or text line.
inline std::optional<std::size_t> pickle_argument_length(std::string_view in, std::size_t pos, char op) {
  const auto available = [&](std::size_t n) { return pos + n <= in.size(); };
  // Bytes up to and including the `lines`-th newline from the argument start.
  const auto through_newlines = [&](int lines) -> std::optional<std::size_t> {
    std::size_t e = pos;
    for (int k = 0; k < lines; ++k) {
      e = in.find('\n', e);
      if (e == std::string_view::npos) return std::nullopt;
      ++e;
    }
    return e - pos;
  };
  switch (op) {
    case 'N': case '\x88': case '\x89': case '}': case ']': case ')':  // constants, empty containers
    case '(': case '.': case 'a': case 's': case 'e': case 'u': case 't': case 'l': case 'd':
    case '\x85': case '\x86': case '\x87': case 'R': case 'b': case 'Q': case '\x81': case '0': case '1':
    case '2':
      return 0;
    case 'K': return 1;
    case 'U': case 'C': case '\x8a':  // one-byte length prefix
      if (!available(1)) return std::nullopt;
      return 1 + pickle_le(in, pos, 1);
    case 'M': return 2;
    case 'J': return 4;
    case 'G': return 8;
    case 'X': case 'T': case 'B': case '\x8b':  // four-byte length prefix
      if (!available(4)) return std::nullopt;
      return 4 + pickle_le(in, pos, 4);
    case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'p': case 'g':  // one text line
      return through_newlines(1);
    case 'c': return through_newlines(2);  // module and name lines
    case '\x80':  // PROTO: FRAMEs come with protocol 4
      if (!available(1) || static_cast<unsigned char>(in[pos]) > 3) return std::nullopt;
      return 1;
    case 'q': case 'h': return 1;
    case 'r': case 'j': return 4;
    default: return std::nullopt;
  }
}

// The rewriter follows the program with a model of the unpickler's stack in
// which each entry remembers where in the output the code that pushed it
// begins, so that a MARK can be inserted before an item, or the code of a
// value dropped, after the fact. Offsets are those of the output without the
// inserted MARKs, which are kept apart (sorted) and merged in at STOP: an
// insertion then moves no byte and renumbers no offset, and the rewrite takes
// time linear in the program's size whatever its nesting.
class PythonPickleRewriter {
 public:
  explicit PythonPickleRewriter(std::string_view in) : in_(in) { out_.reserve(in.size() + in.size() / 8); }

  /// The rewritten program, or nullopt when nothing needs rewriting or the
  /// program has an opcode this does not know (LibTorch then reports the
  /// problem itself), is truncated, or reads a dropped memo slot.
  std::optional<std::string> run() {
    while (pos_ < in_.size()) {
      const std::size_t op_at = pos_;
      const char op = in_[pos_++];
      const std::optional<std::size_t> arg = argument_length(op);
      if (!arg || pos_ + *arg > in_.size()) return std::nullopt;
      const std::string_view code = in_.substr(op_at, 1 + *arg);
      pos_ += *arg;
      if (op == '.') return stop(code);
      if (!apply(op, op_at, code)) return std::nullopt;
    }
    return std::nullopt;  // no STOP
  }

 private:
  enum Tag : std::uint8_t { kValue, kMark, kOrderedDictClass, kOrderedDict };
  struct Entry {
    std::size_t start;  // output offset where the code pushing it begins
    Tag tag;
  };

  // ---- reading the program ---------------------------------------------------

  /// Little-endian unsigned integer of `bytes` bytes at `at`.
  std::size_t le(std::size_t at, int bytes) const { return pickle_le(in_, at, bytes); }

  std::optional<std::size_t> argument_length(char op) const { return pickle_argument_length(in_, pos_, op); }

  // ---- one opcode ------------------------------------------------------------

  /// Applies one opcode to the stack model and writes its (possibly
  /// rewritten) code; false when the program cannot be followed.
  bool apply(char op, std::size_t op_at, std::string_view code) {
    const std::size_t here = out_.size();
    switch (op) {
      case '(': stack_.push_back({here, kMark}); break;
      case 'c': {
        const bool ordered_dict = code.substr(1) == "collections\nOrderedDict\n";
        stack_.push_back({here, ordered_dict ? kOrderedDictClass : kValue});
        break;
      }
      case 'q': case 'r': {
        const std::size_t slot = le(op_at + 1, op == 'q' ? 1 : 4);
        if (!memo_put(slot, here)) return false;
        out_ += memo_code(op, slot);
        return true;
      }
      case 'h': case 'j': {
        const std::size_t slot = le(op_at + 1, op == 'h' ? 1 : 4);
        memo_get(slot, here);
        out_ += memo_code(op, slot);
        return true;
      }
      case 'p': case 'g':  // protocol 0's text memo: torch.save never writes it, LibTorch cannot read it
        return false;
      case 'a': return append_as_appends();
      case 's': return setitem_as_setitems();
      case 'e': case 'u': case '1':
        if (!pop_to_mark()) return false;
        break;
      case 't': case 'l': case 'd': {  // MARK items -> one container
        const auto start = pop_to_mark();
        if (!start) return false;
        stack_.push_back({*start, kValue});
        break;
      }
      case '\x85': case '\x86': case '\x87': {  // TUPLE1..3
        const std::size_t n = static_cast<std::size_t>(op - '\x84');
        if (stack_.size() < n) return false;
        const std::size_t start = stack_[stack_.size() - n].start;
        stack_.resize(stack_.size() - n);
        stack_.push_back({start, kValue});
        break;
      }
      case 'R': case '\x81': return reduce(op, code);
      case 'b': return build(code);
      case 'Q':  // BINPERSID: the persistent id replaces the top
        if (stack_.empty()) return false;
        stack_.back().tag = kValue;
        break;
      case '0':
        if (stack_.empty()) return false;
        stack_.pop_back();
        break;
      case '2':  // DUP
        if (stack_.empty()) return false;
        stack_.push_back({here, stack_.back().tag});
        break;
      case '\x80': break;
      case '\x8a':  // LONG1: LibTorch reads 8-byte ones only
        stack_.push_back({here, kValue});
        if (code.size() - 2 < 8) {
          out_ += long1_as_8_bytes(code.substr(2));
          changed_ = true;
          return true;
        }
        break;
      default: stack_.push_back({here, kValue}); break;  // values
    }
    out_ += code;
    return true;
  }

  /// LONG1 with the little-endian two's-complement `bytes` (fewer than 8)
  /// sign-extended to 8 bytes.
  static std::string long1_as_8_bytes(std::string_view bytes) {
    const bool negative = !bytes.empty() && (static_cast<unsigned char>(bytes.back()) & 0x80);
    std::string code = "\x8a\x08";
    code += bytes;
    code.append(8 - bytes.size(), negative ? '\xff' : '\0');
    return code;
  }

  /// STOP: the rewritten program, the MARKs merged in, if anything changed.
  std::optional<std::string> stop(std::string_view code) {
    out_ += code;
    if (!dropped_reads_.empty() || !changed_) return std::nullopt;
    std::string merged;
    merged.reserve(out_.size() + marks_.size());
    std::size_t from = 0;
    for (const std::size_t at : marks_) {
      merged.append(out_, from, at - from);
      merged += '(';
      from = at;
    }
    merged.append(out_, from);
    return merged;
  }

  // ---- the rewrites ------------------------------------------------------------

  /// `list item APPEND` -> `list MARK item APPENDS`.
  bool append_as_appends() {
    if (stack_.size() < 2) return false;
    const std::size_t at = stack_.back().start;
    stack_.pop_back();
    insert_mark(at);
    out_ += 'e';
    return true;
  }
  /// `dict key value SETITEM` -> `dict MARK key value SETITEMS`.
  bool setitem_as_setitems() {
    if (stack_.size() < 3) return false;
    const std::size_t at = stack_[stack_.size() - 2].start;
    stack_.resize(stack_.size() - 2);
    insert_mark(at);
    out_ += 'u';
    return true;
  }
  /// `callable args REDUCE`: `OrderedDict ()` becomes `EMPTY_DICT`.
  bool reduce(char op, std::string_view code) {
    if (stack_.size() < 2) return false;
    const Entry callable = stack_[stack_.size() - 2];
    stack_.resize(stack_.size() - 2);
    if (op == 'R' && callable.tag == kOrderedDictClass) {
      truncate(callable.start);
      stack_.push_back({callable.start, kOrderedDict});
      out_ += '}';
    } else {
      stack_.push_back({callable.start, kValue});
      out_ += code;
    }
    return true;
  }
  /// `object state BUILD`: dropped with its state on an OrderedDict.
  bool build(std::string_view code) {
    if (stack_.size() < 2) return false;
    const Entry state = stack_.back();
    stack_.pop_back();
    if (stack_.back().tag == kOrderedDict)
      truncate(state.start);
    else
      out_ += code;
    return true;
  }

  // ---- the memo ------------------------------------------------------------------

  /// A PUT at output offset `here`: the slot takes the top's tag.
  bool memo_put(std::size_t slot, std::size_t here) {
    if (stack_.empty()) return false;
    set_memo_tag(slot, stack_.back().tag == kMark ? kValue : stack_.back().tag);
    dropped_.erase(slot);
    puts_.emplace_back(here, slot);  // in offset order: truncate() removes from the end
    renumbered_[slot] = next_slot_++;
    return true;
  }
  /// A PUT's or GET's code with the slot renumbered: slots written by dropped
  /// code leave no gap, so that the program numbers its slots 0, 1, 2, ... as
  /// Python's pickler does (LibTorch's readers differ on any other numbering:
  /// older ones append each PUT whatever its slot).
  std::string memo_code(char op, std::size_t slot) {
    const auto it = renumbered_.find(slot);
    const std::size_t n = it == renumbered_.end() ? slot : it->second;
    if (n != slot) changed_ = true;
    const bool put = op == 'q' || op == 'r';
    std::string code(1, n < 256 ? (put ? 'q' : 'h') : (put ? 'r' : 'j'));
    for (int b = 0; b < (n < 256 ? 1 : 4); ++b) code += static_cast<char>((n >> (8 * b)) & 0xff);
    return code;
  }
  /// A GET at output offset `here`: pushes the slot's tag; a read of a
  /// dropped slot is remembered (fatal unless it is dropped too).
  void memo_get(std::size_t slot, std::size_t here) {
    if (dropped_.count(slot) != 0) dropped_reads_.push_back(here);
    stack_.push_back({here, memo_tag(slot)});
  }
  Tag memo_tag(std::size_t slot) const {
    const auto it = memo_tags_.find(slot);
    return it == memo_tags_.end() ? kValue : it->second;
  }
  void set_memo_tag(std::size_t slot, Tag t) {
    if (t == kValue)
      memo_tags_.erase(slot);
    else
      memo_tags_[slot] = t;
  }

  // ---- editing the output ------------------------------------------------------------

  /// Pops the stack down to the topmost MARK; the MARK's output offset.
  std::optional<std::size_t> pop_to_mark() {
    for (std::size_t k = stack_.size(); k-- > 0;)
      if (stack_[k].tag == kMark) {
        const std::size_t start = stack_[k].start;
        stack_.resize(k);
        return start;
      }
    return std::nullopt;
  }
  /// Drops the output from `from` on: its memo writes become dropped slots,
  /// its MARKs and its reads of dropped slots go with it. (Offsets are only
  /// ever appended in increasing order, so what goes is at the ends.)
  void truncate(std::size_t from) {
    while (!puts_.empty() && puts_.back().first >= from) {
      dropped_.insert(puts_.back().second);
      renumbered_.erase(puts_.back().second);
      --next_slot_;  // the dropped PUTs were numbered last
      puts_.pop_back();
    }
    while (!dropped_reads_.empty() && dropped_reads_.back() >= from) dropped_reads_.pop_back();
    marks_.erase(marks_.lower_bound(from), marks_.end());
    out_.resize(from);
    changed_ = true;
  }
  /// A MARK before output offset `at`, merged in at STOP.
  void insert_mark(std::size_t at) {
    marks_.insert(at);
    changed_ = true;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::string out_;
  std::vector<Entry> stack_;
  std::unordered_map<std::size_t, Tag> memo_tags_;         // the tagged slots
  std::vector<std::pair<std::size_t, std::size_t>> puts_;  // (output offset, slot)
  std::unordered_set<std::size_t> dropped_;                // slots written by dropped code
  std::vector<std::size_t> dropped_reads_;                 // output offsets reading a dropped slot
  std::multiset<std::size_t> marks_;                       // output offsets to insert a MARK before
  std::unordered_map<std::size_t, std::size_t> renumbered_;  // slot -> the slot it is written as
  std::size_t next_slot_ = 0;                                // the next PUT's slot in the output
  bool changed_ = false;
};

PPE_DECL std::optional<std::string> rewrite_python_pickle(std::string_view in) {
  return PythonPickleRewriter(in).run();
}

// Follows a program with a model of the stack in which a value made from an
// unsupported GLOBAL carries it, and a container that takes such a value in
// carries it with the key (or index) prepended: the path is complete when the
// value reaches the top-level object, at STOP. Texts are views of the program
// and a found global is shared, so that copies (DUP, memo reads) cost nothing
// however large; a path stops growing at kMaxPath characters.
class UnsupportedGlobalFinder {
 public:
  explicit UnsupportedGlobalFinder(std::string_view in) : in_(in) {}

  std::shared_ptr<const UnsupportedGlobal> run() {
    std::size_t pos = 0;
    while (pos < in_.size()) {
      const char op = in_[pos++];
      const std::optional<std::size_t> arg = pickle_argument_length(in_, pos, op);
      if (!arg || pos + *arg > in_.size()) return nullptr;
      const std::string_view a = in_.substr(pos, *arg);
      pos += *arg;
      if (op == '.') return stack_.empty() ? nullptr : stack_.back().found;
      if (!apply(op, a)) return nullptr;
    }
    return nullptr;  // no STOP
  }

 private:
  enum Kind : std::uint8_t { kOther, kMark, kDict, kList, kString, kOrderedDictClass };
  static constexpr std::size_t kMaxPath = 1024;
  struct Item {
    Item(Kind k = kOther, std::string_view t = {}) : kind(k), text(t) {}
    Kind kind;
    std::string_view text;                            // kString: the text
    std::size_t size = 0;                             // kList: the items appended so far
    std::shared_ptr<const UnsupportedGlobal> found;  // path relative to this value
  };

  bool apply(char op, std::string_view a) {
    switch (op) {
      case 'c': return global(a);
      case '(': stack_.push_back({kMark}); break;
      case '}': stack_.push_back({kDict}); break;
      case ']': stack_.push_back({kList}); break;
      case ')': stack_.push_back({kOther}); break;
      case 'X': case 'T': stack_.push_back({kString, a.substr(4)}); break;
      case 'U': stack_.push_back({kString, a.substr(1)}); break;
      case 'V': stack_.push_back({kString, a.substr(0, a.size() - 1)}); break;
      case 'S': stack_.push_back({kString, a.substr(1, a.size() >= 3 ? a.size() - 3 : 0)}); break;
      case 'a': case 's': {  // APPEND, SETITEM: the items above the container
        const std::size_t n = op == 'a' ? 1 : 2;
        if (stack_.size() < n + 1) return false;
        std::vector<Item> items(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(n)),
                                std::make_move_iterator(stack_.end()));
        stack_.resize(stack_.size() - n);
        take(stack_.back(), items, op == 's');
        break;
      }
      case 'e': case 'u': {  // APPENDS, SETITEMS
        std::optional<std::vector<Item>> items = pop_to_mark();
        if (!items || stack_.empty()) return false;
        take(stack_.back(), *items, op == 'u');
        break;
      }
      case 'd': case 'l': case 't': case '1': {  // MARK items -> DICT, LIST, TUPLE; POP_MARK
        std::optional<std::vector<Item>> items = pop_to_mark();
        if (!items) return false;
        if (op == '1') break;
        Item made{op == 'd' ? kDict : op == 'l' ? kList : kOther};
        take(made, *items, op == 'd');
        stack_.push_back(std::move(made));
        break;
      }
      case '\x85': case '\x86': case '\x87': {  // TUPLE1..3
        const auto n = static_cast<std::ptrdiff_t>(op - '\x84');
        if (stack_.size() < static_cast<std::size_t>(n)) return false;
        std::vector<Item> items(std::make_move_iterator(stack_.end() - n), std::make_move_iterator(stack_.end()));
        stack_.resize(stack_.size() - static_cast<std::size_t>(n));
        Item made;
        take(made, items, false);
        stack_.push_back(std::move(made));
        break;
      }
      case 'R': case '\x81': case 'b': {  // REDUCE, NEWOBJ (callable args), BUILD (object state)
        if (stack_.size() < 2) return false;
        Item second = std::move(stack_.back());
        stack_.pop_back();
        Item& first = stack_.back();
        const bool ordered_dict = op == 'R' && first.kind == kOrderedDictClass;
        // The object made is where an unsupported callable, argument or state is.
        if (!first.found && second.found)
          first.found = std::make_shared<const UnsupportedGlobal>(UnsupportedGlobal{second.found->global, ""});
        if (op != 'b') first.kind = ordered_dict ? kDict : kOther;
        break;
      }
      case '0':  // POP
        if (stack_.empty()) return false;
        stack_.pop_back();
        break;
      case 'Q':  // BINPERSID: the persistent id (a storage) replaces the top
        if (stack_.empty()) return false;
        stack_.back() = {kOther};
        break;
      case '2':  // DUP
        if (stack_.empty()) return false;
        stack_.push_back(stack_.back());
        break;
      case 'q': case 'r': case 'p': {  // PUTs
        const std::optional<std::size_t> n = slot(op, a);
        if (stack_.empty() || !n) return false;
        memo_[*n] = stack_.back();
        break;
      }
      case 'h': case 'j': case 'g': {  // GETs
        const std::optional<std::size_t> n = slot(op, a);
        if (!n) return false;
        const auto it = memo_.find(*n);
        stack_.push_back(it == memo_.end() ? Item{kOther} : it->second);
        break;
      }
      case '\x80': break;
      default: stack_.push_back({kOther}); break;  // numbers, None, booleans, bytes, persistent ids
    }
    return true;
  }

  /// GLOBAL: LibTorch's own classes and functions and OrderedDict are read;
  /// anything else is a Python object no State holds.
  bool global(std::string_view a) {
    const std::size_t nl = a.find('\n');
    const std::string module(a.substr(0, nl)), name(a.substr(nl + 1, a.size() - nl - 2));
    Item item{module == "collections" && name == "OrderedDict" ? kOrderedDictClass : kOther};
    if (item.kind == kOther && !module.starts_with("torch") && !module.starts_with("__torch__"))
      item.found = std::make_shared<const UnsupportedGlobal>(UnsupportedGlobal{module + "." + name, ""});
    stack_.push_back(std::move(item));
    return true;
  }

  /// `container` takes `items` (key-value pairs when `pairs`, else values at
  /// the next indices): the first that carries a GLOBAL passes it on, its key
  /// prepended to the path.
  static void take(Item& container, std::vector<Item>& items, bool pairs) {
    const std::size_t step = pairs ? 2 : 1;
    for (std::size_t i = 0; i + step <= items.size(); i += step) {
      const Item& value = items[i + step - 1];
      if (container.found || !value.found) continue;
      const std::string key = pairs ? (items[i].kind == kString ? std::string(items[i].text) : "?")
                                    : std::to_string(container.size + i);
      const std::string& below = value.found->path;
      container.found = std::make_shared<const UnsupportedGlobal>(UnsupportedGlobal{
          value.found->global, below.empty() ? key : below.size() >= kMaxPath ? below : key + "/" + below});
    }
    if (!pairs) container.size += items.size();
  }

  static std::optional<std::size_t> slot(char op, std::string_view a) {
    if (op == 'p' || op == 'g') {  // a decimal line
      std::size_t n = 0;
      const auto [end, ec] = std::from_chars(a.data(), a.data() + a.size(), n);
      if (ec != std::errc() || end != a.data() + a.size() - 1) return std::nullopt;
      return n;
    }
    return pickle_le(a, 0, op == 'q' || op == 'h' ? 1 : 4);
  }
  /// Pops the items down to the topmost MARK (and the MARK).
  std::optional<std::vector<Item>> pop_to_mark() {
    for (std::size_t k = stack_.size(); k-- > 0;)
      if (stack_[k].kind == kMark) {
        std::vector<Item> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(k + 1)),
                                std::make_move_iterator(stack_.end()));
        stack_.resize(k);
        return items;
      }
    return std::nullopt;
  }

  std::string_view in_;
  std::vector<Item> stack_;
  std::map<std::size_t, Item> memo_;
};

PPE_DECL std::optional<UnsupportedGlobal> find_unsupported_global(std::string_view program) {
  const auto found = UnsupportedGlobalFinder(program).run();
  if (!found) return std::nullopt;
  return *found;
}

}  // namespace ppe::detail
