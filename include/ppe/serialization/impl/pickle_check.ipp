// Definitions of serialization/detail/pickle_check.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/serialization/detail/pickle_check.hpp"

namespace ppe::detail {

// The checker keeps a model of LibTorch's unpickler: its stack of values,
// its marks (stack sizes, as LibTorch keeps them, not stack entries as
// Python's pickle does) and its memo, with each value a node that remembers
// what the checks need: a string's text, an integer's value, a tuple's,
// list's or dictionary's items (references to nodes: a memo read shares a
// node, as LibTorch shares the value), a storage's element count.
class PickleChecker {
 public:
  PickleChecker(std::string_view in, const PickleCheckContext& context) : in_(in), context_(context) {}

  std::optional<std::string> run() {
    if (in_.size() < 2 || in_[0] != '\x80' || static_cast<unsigned char>(in_[1]) > 3)
      fail(0, "the program does not start with PROTO 2 (or 3), as torch.save writes it");
    pos_ = 2;
    while (pos_ < in_.size()) {
      at_ = pos_;
      const char op = in_[pos_++];
      if (op == '.') {
        if (stack_.size() != 1)
          fail(at_, "STOP leaves " + std::to_string(stack_.size()) + " values on the stack, expected 1");
        check_values();
        return std::nullopt;
      }
      if (auto stop = apply(op)) return stop;
    }
    fail(in_.size(), "the program ends without STOP (truncated)");
  }

 private:
  enum class Kind : std::uint8_t {
    None, Bool, Int, Float, String, Tuple, List, Dict, Global, StorageType, QScheme, Storage, Tensor, Other
  };
  // What a GLOBAL makes, when it is called by REDUCE or BUILD.
  enum class Call : std::uint8_t {
    None, RebuildTensor, RebuildParameter, OrderedDict, Device, Complex, BuildList, RestoreTypeTag, IntList
  };
  struct Node {
    Kind kind = Kind::Other;
    Call call = Call::None;
    std::int64_t value = 0;           // Int: the value; Storage: the element count; StorageType: the element size
    std::string_view text;            // String: the text
    std::vector<std::uint32_t> items;  // Tuple, List, Dict (key, value, key, value ...)
  };

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw ppe::serialization::CorruptFileError("ppe: cannot read " + std::string(context_.source) +
                                               ": data.pkl, opcode at offset " + std::to_string(at) + ": " + what);
  }

  // ---- reading the program -------------------------------------------------

  /// `n` argument bytes after the opcode, which must be there.
  std::string_view take(std::size_t n, const char* what) {
    if (in_.size() - pos_ < n)
      fail(at_, std::string(what) + " needs " + std::to_string(n) + " bytes, the program has " +
                    std::to_string(in_.size() - pos_) + " left");
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint64_t le(std::size_t n, const char* what) {
    const std::string_view s = take(n, what);
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[k]);
    return v;
  }
  /// A GLOBAL's line, up to its newline.
  std::string_view line() {
    const std::size_t nl = in_.find('\n', pos_);
    if (nl == std::string_view::npos) fail(at_, "GLOBAL's module and name lines are not both terminated by a newline");
    const std::string_view s = in_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  // ---- values --------------------------------------------------------------

  std::uint32_t make(Kind kind) {
    nodes_.push_back(Node{});
    nodes_.back().kind = kind;
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  void push(std::uint32_t id) { stack_.push_back(id); }
  std::uint32_t push_new(Kind kind) {
    const std::uint32_t id = make(kind);
    push(id);
    return id;
  }
  void need(std::size_t n, const char* op) const {
    if (stack_.size() < n)
      fail(at_, std::string(op) + " needs " + std::to_string(n) + " values on the stack, it holds " +
                    std::to_string(stack_.size()));
  }
  std::uint32_t pop() {
    const std::uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  /// The stack size its MARK recorded (removed when `consume`), checked
  /// against the stack as it is now.
  std::size_t mark(const char* op, bool consume) {
    if (marks_.empty()) fail(at_, std::string(op) + " without a MARK before it");
    const std::size_t start = marks_.back();
    if (consume) marks_.pop_back();
    if (start > stack_.size())
      fail(at_, std::string(op) + "'s MARK was set at stack size " + std::to_string(start) +
                    ", but values below it were taken since (the stack holds " + std::to_string(stack_.size()) + ")");
    return start;
  }
  /// Moves the stack's values above `start` into `items` of `into`.
  void move_items(std::size_t start, std::uint32_t into) {
    auto& items = nodes_[into].items;
    items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end());
    stack_.resize(start);
  }
  const Node& node(std::uint32_t id) const { return nodes_[id]; }
  std::string kind_name(Kind k) const {
    switch (k) {
      case Kind::None: return "None";
      case Kind::Bool: return "a bool";
      case Kind::Int: return "an int";
      case Kind::Float: return "a float";
      case Kind::String: return "a string";
      case Kind::Tuple: return "a tuple";
      case Kind::List: return "a list";
      case Kind::Dict: return "a dict";
      case Kind::Global: return "a global";
      case Kind::StorageType: return "a storage class";
      case Kind::QScheme: return "a quantization scheme";
      case Kind::Storage: return "a storage";
      case Kind::Tensor: return "a tensor";
      case Kind::Other: return "an object";
    }
    return "a value";
  }
  /// Item `i` of the tuple `id`, which must be of `kind` (what: for messages).
  const Node& item(std::uint32_t id, std::size_t i, Kind kind, const std::string& what) const {
    const Node& t = node(id);
    if (i >= t.items.size()) fail(at_, what + " is missing (the tuple has " + std::to_string(t.items.size()) + " items)");
    const Node& n = node(t.items[i]);
    if (n.kind != kind) fail(at_, what + " is " + kind_name(n.kind) + ", expected " + kind_name(kind));
    return n;
  }

  // ---- one opcode ----------------------------------------------------------

  /// Applies `op`; the global at which LibTorch stops, when it does.
  std::optional<std::string> apply(char op) {
    switch (op) {
      case '(': marks_.push_back(stack_.size()); break;
      case ')': push_new(Kind::Tuple); break;
      case ']': push_new(Kind::List); break;
      case '}': push_new(Kind::Dict); break;
      case 'N': push_new(Kind::None); break;
      case '\x88': case '\x89': push_new(Kind::Bool); break;
      case 'K': int_value(static_cast<std::int64_t>(le(1, "BININT1"))); break;
      case 'M': int_value(static_cast<std::int64_t>(le(2, "BININT2"))); break;
      case 'J': int_value(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4, "BININT")))); break;
      case '\x8a': long1(); break;
      case 'G': take(8, "BINFLOAT"); push_new(Kind::Float); break;
      case 'X': {
        const std::uint64_t n = le(4, "BINUNICODE's length");
        const std::string_view text = take(static_cast<std::size_t>(n), "BINUNICODE's text");
        nodes_[push_new(Kind::String)].text = text;
        break;
      }
      case 'q': put(le(1, "BINPUT")); break;
      case 'r': put(le(4, "LONG_BINPUT")); break;
      case 'h': get(le(1, "BINGET")); break;
      case 'j': get(le(4, "LONG_BINGET")); break;
      case 't': {  // MARK items TUPLE
        const std::size_t start = mark("TUPLE", true);
        const std::uint32_t t = make(Kind::Tuple);
        move_items(start, t);
        push(t);
        break;
      }
      case '\x85': case '\x86': case '\x87': {  // TUPLE1..3
        const std::size_t n = static_cast<std::size_t>(op - '\x84');
        need(n, "TUPLE1/2/3");
        const std::uint32_t t = make(Kind::Tuple);
        move_items(stack_.size() - n, t);
        push(t);
        break;
      }
      case 'l': case 'd': {  // MARK items LIST / DICT
        const std::size_t start = mark(op == 'l' ? "LIST" : "DICT", true);
        if (op == 'd' && (stack_.size() - start) % 2 != 0)
          fail(at_, "DICT over " + std::to_string(stack_.size() - start) + " values, expected key-value pairs");
        const std::uint32_t c = make(op == 'l' ? Kind::List : Kind::Dict);
        move_items(start, c);
        push(c);
        break;
      }
      case 'e': case 'u': {  // container MARK items APPENDS / SETITEMS
        const char* name = op == 'e' ? "APPENDS" : "SETITEMS";
        const std::size_t start = mark(name, true);
        if (start == 0) fail(at_, std::string(name) + " with no container below its MARK");
        const std::uint32_t target = stack_[start - 1];
        const Kind want = op == 'e' ? Kind::List : Kind::Dict;
        if (node(target).kind != want)
          fail(at_, std::string(name) + " into " + kind_name(node(target).kind) + ", expected " + kind_name(want));
        if (op == 'u' && (stack_.size() - start) % 2 != 0)
          fail(at_, "SETITEMS over " + std::to_string(stack_.size() - start) + " values, expected key-value pairs");
        move_items(start, target);
        break;
      }
      case 's': {  // dict key value SETITEM
        need(3, "SETITEM");
        const std::uint32_t target = stack_[stack_.size() - 3];
        if (node(target).kind != Kind::Dict) fail(at_, "SETITEM into " + kind_name(node(target).kind) + ", expected a dict");
        move_items(stack_.size() - 2, target);
        break;
      }
      case 'c': return global();
      case '\x81':  // NEWOBJ: LibTorch drops the arguments and keeps the class for BUILD
        need(2, "NEWOBJ");
        pop();
        break;
      case 'R': case 'b': call(op == 'R' ? "REDUCE" : "BUILD"); break;
      case 'Q': persistent_id(); break;
      default: {
        const auto byte = static_cast<unsigned char>(op);
        static const char* hex = "0123456789abcdef";
        fail(at_, std::string("opcode 0x") + hex[byte >> 4] + hex[byte & 15] +
                      " is not one LibTorch's reader knows (it reads what torch.save writes with pickle protocol 2)");
      }
    }
    return std::nullopt;
  }

  void int_value(std::int64_t v) { nodes_[push_new(Kind::Int)].value = v; }
  /// LONG1: a little-endian two's-complement integer of up to 8 bytes.
  void long1() {
    const std::uint64_t n = le(1, "LONG1's length");
    if (n > 8) fail(at_, "LONG1 declares a " + std::to_string(n) + "-byte integer; LibTorch reads at most 8 bytes");
    const std::string_view s = take(static_cast<std::size_t>(n), "LONG1's bytes");
    std::uint64_t u = 0;
    for (std::size_t k = s.size(); k-- > 0;) u = (u << 8) | static_cast<unsigned char>(s[k]);
    if (n > 0 && n < 8 && (static_cast<unsigned char>(s[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
    int_value(static_cast<std::int64_t>(u));
  }
  void put(std::uint64_t slot) {
    need(1, "a memo PUT");
    // LibTorch's memo table grows to the slot: a slot beyond the program's
    // size is more than any program writes (Python numbers its slots 0, 1, ...).
    if (slot >= in_.size())
      fail(at_, "memo PUT to slot " + std::to_string(slot) + ", beyond the " + std::to_string(in_.size()) +
                    " bytes of the program");
    // Python's pickler (and ppe's rewrite of its programs) numbers slots 0,
    // 1, 2, ...; LibTorch's readers differ on any other numbering (older ones
    // append each PUT whatever its slot, newer ones write the slot named), so
    // the value this check follows would not be the one LibTorch reads.
    if (slot != memo_.size())
      fail(at_, "memo PUT to slot " + std::to_string(slot) + ", expected the next slot, " +
                    std::to_string(memo_.size()) + " (slots are numbered in order)");
    memo_.push_back(stack_.back());
  }
  void get(std::uint64_t slot) {
    if (slot >= memo_.size())
      fail(at_, "memo GET of slot " + std::to_string(slot) + ", which nothing was put in");
    push(memo_[static_cast<std::size_t>(slot)]);
  }

  const std::string_view in_;
  const PickleCheckContext& context_;
  std::size_t pos_ = 0, at_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::vector<std::uint32_t> memo_;
  std::map<std::string_view, std::uint64_t> storage_bytes_;  // key -> bytes its first reference declared

  // ---- globals and calls ---------------------------------------------------

  /// GLOBAL: what LibTorch makes of `module.name` (see Unpickler::readGlobal).
  std::optional<std::string> global() {
    const std::string_view module = line(), name = line();
    const std::string full = std::string(module) + "." + std::string(name);
    const auto refuse = [&](const std::string& why) { refuse_global(full, why); };
    const auto callable = [&](Call c) {
      nodes_[push_new(Kind::Global)].call = c;
      return std::nullopt;
    };
    if (module == "torch._utils") {
      if (name == "_rebuild_tensor_v2") return callable(Call::RebuildTensor);
      if (name == "_rebuild_parameter") return callable(Call::RebuildParameter);
      if (name == "_rebuild_qtensor")
        refuse("quantized tensors are not read from files: their quantization parameters cannot be checked before "
               "LibTorch uses them (save their int_repr() and parameters instead)");
      if (name == "_rebuild_sparse_tensor")
        refuse("sparse tensors are not read from files: their indices cannot be checked before LibTorch uses them "
               "(save to_dense(), or the indices and values as two tensors)");
    } else if (module == "torch._tensor" && name == "_rebuild_from_type_v2") {
      refuse("a tensor subclass or a tensor with Python attributes; save plain tensors (torch.Tensor, .data)");
    } else if (module == "torch.jit._pickle") {
      if (name == "restore_type_tag") return callable(Call::RestoreTypeTag);
      if (name == "build_intlist" || name == "build_tensorlist" || name == "build_doublelist" ||
          name == "build_boollist")
        return callable(Call::BuildList);
      if (name == "build_tensor_from_id") refuse("a reference to a tensor table, which a file read alone has not");
    } else if (module == "__main__") {
      if (name == "IntList") return callable(Call::IntList);
      if (name == "TensorID") refuse("a reference to a tensor table, which a file read alone has not");
    } else if (module == "builtins" && name == "complex") {
      return callable(Call::Complex);
    } else if (module == "collections" && name == "OrderedDict") {
      return callable(Call::OrderedDict);
    } else if (module == "torch") {
      if (name == "device") return callable(Call::Device);
      if (name.ends_with("Storage")) {
        const std::size_t size = context_.storage_item_size(name.substr(0, name.size() - 7));
        if (size == 0) refuse("this LibTorch has no such storage type");
        nodes_[push_new(Kind::StorageType)].value = static_cast<std::int64_t>(size);
        return std::nullopt;
      }
      if (context_.is_qscheme(name)) {
        push_new(Kind::QScheme);
        return std::nullopt;
      }
    } else if (!module.starts_with("torch") && !module.starts_with("__torch__")) {
      // A Python class or function: LibTorch's reader, which ppe gives no
      // type resolver, refuses it here, before anything after it is built.
      return full;
    }
    refuse_global(full, "LibTorch's reader knows no such global");
  }
  [[noreturn]] void refuse_global(const std::string& full, const std::string& why) const {
    fail(at_, "it holds " + full + ": " + why);
  }

  /// REDUCE and BUILD (which LibTorch treats alike): `callable argument` -> result.
  void call(const char* op) {
    need(2, op);
    const std::uint32_t arg = pop(), callee = pop();
    const Node& f = node(callee);
    if (f.kind != Kind::Global)
      fail(at_, std::string(op) + " calls " + kind_name(f.kind) + ", expected a global (a class or a function)");
    const std::string args = std::string(op) + "'s argument";
    const auto tuple_arg = [&] {
      if (node(arg).kind != Kind::Tuple) fail(at_, args + " is " + kind_name(node(arg).kind) + ", expected a tuple");
    };
    switch (f.call) {
      case Call::RebuildTensor: tuple_arg(); push(rebuild_tensor(arg)); return;
      case Call::RebuildParameter: {
        tuple_arg();
        item(arg, 0, Kind::Tensor, "_rebuild_parameter's tensor");
        push(node(arg).items[0]);
        return;
      }
      case Call::OrderedDict: push_new(Kind::None); return;  // LibTorch replaces the argument with None
      case Call::Device:
        tuple_arg();
        item(arg, 0, Kind::String, "torch.device's name");
        push_new(Kind::Other);
        return;
      case Call::Complex:
        tuple_arg();
        item(arg, 0, Kind::Float, "complex's real part");
        item(arg, 1, Kind::Float, "complex's imaginary part");
        push_new(Kind::Other);
        return;
      case Call::BuildList:
        tuple_arg();
        item(arg, 0, Kind::List, "the list");
        push(node(arg).items[0]);
        return;
      case Call::RestoreTypeTag: {
        tuple_arg();
        const Node& type = item(arg, 1, Kind::String, "restore_type_tag's type");
        check_type_tag(type.text);
        const std::uint32_t value = node(arg).items[0];
        if (node(value).kind != Kind::List && node(value).kind != Kind::Dict)
          fail(at_, "restore_type_tag's value is " + kind_name(node(value).kind) + ", expected a list or a dict");
        push(value);
        return;
      }
      case Call::IntList:
        if (node(arg).kind != Kind::List) fail(at_, args + " is " + kind_name(node(arg).kind) + ", expected a list");
        push(arg);
        return;
      case Call::None: break;
    }
    fail(at_, std::string(op) + " calls a global that is no function");
  }

  /// A container type (`Dict[str, List[int]]`): LibTorch's type parser
  /// recurses into its brackets.
  void check_type_tag(std::string_view type) const {
    constexpr std::size_t kMaxLength = 1024, kMaxNesting = 32;
    std::size_t depth = 0, deepest = 0;
    for (const char ch : type) {
      if (ch == '[' || ch == '(') deepest = std::max(deepest, ++depth);
      if ((ch == ']' || ch == ')') && depth > 0) --depth;
    }
    if (type.size() > kMaxLength || deepest > kMaxNesting)
      fail(at_, "restore_type_tag's type is " + std::to_string(type.size()) + " bytes nested " +
                    std::to_string(deepest) + " deep, expected at most " + std::to_string(kMaxLength) + " bytes and " +
                    std::to_string(kMaxNesting) + " levels");
  }

  /// A non-negative int of the tuple `id` at `i`.
  std::int64_t count(std::uint32_t id, std::size_t i, const std::string& what) const {
    const std::int64_t v = item(id, i, Kind::Int, what).value;
    if (v < 0) fail(at_, what + " is " + std::to_string(v) + ", expected a non-negative number");
    return v;
  }

  /// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]).
  std::uint32_t rebuild_tensor(std::uint32_t args) {
    const Node& storage = item(args, 0, Kind::Storage, "the tensor's storage");
    const std::uint64_t offset = static_cast<std::uint64_t>(count(args, 1, "the tensor's storage offset"));
    const Node& sizes = item(args, 2, Kind::Tuple, "the tensor's sizes");
    const Node& strides = item(args, 3, Kind::Tuple, "the tensor's strides");
    item(args, 4, Kind::Bool, "the tensor's requires_grad");
    if (node(args).items.size() < 6) fail(at_, "the tensor's backward hooks are missing");
    if (node(args).items.size() >= 7) item(args, 6, Kind::Dict, "the tensor's metadata");
    if (sizes.items.size() != strides.items.size())
      fail(at_, "the tensor has " + std::to_string(sizes.items.size()) + " sizes and " +
                    std::to_string(strides.items.size()) + " strides");
    // The element after the last: 1 + offset + sum((size - 1) * stride), or
    // the offset alone when a size is 0; every step checked for overflow.
    std::uint64_t last = offset, elements = 1;
    bool empty = false;
    const auto size_id = args_item(args, 2), stride_id = args_item(args, 3);
    for (std::size_t d = 0; d < node(size_id).items.size(); ++d) {
      const std::uint64_t size = static_cast<std::uint64_t>(count(size_id, d, "size " + std::to_string(d)));
      const std::uint64_t stride = static_cast<std::uint64_t>(count(stride_id, d, "stride " + std::to_string(d)));
      std::uint64_t step = 0;
      if (size == 0) empty = true;
      if (__builtin_mul_overflow(size == 0 ? 0 : size - 1, stride, &step) || __builtin_add_overflow(last, step, &last) ||
          __builtin_mul_overflow(elements, size, &elements) || elements > (std::uint64_t{1} << 62))
        fail(at_, "the tensor's sizes and strides overflow 64 bits");
    }
    const std::uint64_t needed = empty ? offset : last + 1;
    const std::uint64_t have = static_cast<std::uint64_t>(storage.value);
    if (needed > have)
      fail(at_, "a tensor reaches element " + std::to_string(needed) + " of its storage, which holds " +
                    std::to_string(have) + " elements");
    const std::uint32_t t = make(Kind::Tensor);
    nodes_[t].value = static_cast<std::int64_t>(elements);
    return t;
  }
  std::uint32_t args_item(std::uint32_t args, std::size_t i) const { return node(args).items[i]; }

  /// BINPERSID: ('storage', <storage class>, key, location, element count).
  void persistent_id() {
    need(1, "BINPERSID");
    const std::uint32_t id = pop();
    if (node(id).kind != Kind::Tuple)
      fail(at_, "BINPERSID's id is " + kind_name(node(id).kind) + ", expected a tuple ('storage', ...)");
    if (item(id, 0, Kind::String, "the persistent id's tag").text != "storage")
      fail(at_, "the persistent id's tag is not 'storage'");
    const std::int64_t item_size = item(id, 1, Kind::StorageType, "the storage's class").value;
    const std::string_view key = item(id, 2, Kind::String, "the storage's key").text;
    item(id, 3, Kind::String, "the storage's location");
    const std::int64_t numel = count(id, 4, "the storage's element count");
    const std::string name = "storage '" + std::string(key) + "'";
    std::uint64_t bytes = 0;
    if (numel > 0) {
      const std::optional<std::uint64_t> record = context_.record_size(key);
      if (!record) fail(at_, name + " has no record data/" + std::string(key) + " in the archive");
      if (static_cast<std::uint64_t>(numel) > *record / static_cast<std::uint64_t>(item_size))
        fail(at_, name + " declares " + std::to_string(numel) + " elements of " + std::to_string(item_size) +
                      " bytes, its record holds " + std::to_string(*record) + " bytes");
      bytes = static_cast<std::uint64_t>(numel) * static_cast<std::uint64_t>(item_size);
    }
    // LibTorch reads a key once and shares it (its storage context): every
    // reference must declare the bytes the first one did.
    const auto [it, first] = storage_bytes_.emplace(key, bytes);
    if (!first && it->second != bytes)
      fail(at_, name + " declares " + std::to_string(bytes) + " bytes here and " + std::to_string(it->second) +
                    " bytes where it first appears");
    const std::uint32_t s = push_new(Kind::Storage);
    nodes_[s].value = static_cast<std::int64_t>(bytes / static_cast<std::uint64_t>(item_size));
  }

  // ---- the values made -----------------------------------------------------

  /// No container holds itself, none nests deeper than kMaxPickleDepth, and
  /// the value yielded, its shared parts copied, stays within kPickleExpansion
  /// times the program's size. One depth-first pass over every node.
  void check_values() {
    const std::size_t n = nodes_.size();
    const std::uint64_t max_values = std::max<std::uint64_t>(std::uint64_t{1} << 20, kPickleExpansion * in_.size());
    const std::uint64_t max_text = std::max<std::uint64_t>(std::uint64_t{1} << 24, kPickleExpansion * in_.size());
    enum : std::uint8_t { kNew, kOpen, kDone };
    std::vector<std::uint8_t> state(n, kNew);
    std::vector<std::uint32_t> depth(n, 1);
    std::vector<std::uint64_t> values(n, 1), text(n, 0);
    std::vector<std::pair<std::uint32_t, std::size_t>> path;  // (node, next item)
    for (std::uint32_t root = 0; root < n; ++root) {
      if (state[root] != kNew) continue;
      state[root] = kOpen;
      path.emplace_back(root, 0);
      while (!path.empty()) {
        auto& [id, next] = path.back();
        const auto& items = nodes_[id].items;
        if (next < items.size()) {
          const std::uint32_t child = items[next++];
          if (state[child] == kOpen) fail(in_.size() - 1, "a " + kind_name(nodes_[child].kind).substr(2) +
                                                              " holds itself (a cycle), which no ppe::State can be");
          if (state[child] == kNew) {
            state[child] = kOpen;
            path.emplace_back(child, 0);
          }
          continue;
        }
        // All items done: this node's depth and expanded size.
        std::uint32_t d = 1;
        std::uint64_t v = 1, t = nodes_[id].kind == Kind::String ? nodes_[id].text.size() : 0;
        for (const std::uint32_t c : items) {
          d = std::max(d, depth[c] + 1);
          v = std::min(v + values[c], max_values + 1);
          t = std::min(t + text[c], max_text + 1);
        }
        if (d > kMaxPickleDepth)
          fail(in_.size() - 1, "its values nest " + std::to_string(d) + " levels deep, more than the " +
                                   std::to_string(kMaxPickleDepth) + " ppe reads");
        depth[id] = d;
        values[id] = v;
        text[id] = t;
        state[id] = kDone;
        path.pop_back();
      }
    }
    const std::uint32_t top = stack_.back();
    if (values[top] > max_values || text[top] > max_text)
      fail(in_.size() - 1, "its value repeats shared parts to more than " + std::to_string(max_values) +
                               " values or " + std::to_string(max_text) + " bytes of text (" +
                               std::to_string(kPickleExpansion) + " times the program's " +
                               std::to_string(in_.size()) + " bytes)");
  }
};

PPE_DECL std::optional<std::string> check_pickle_program(std::string_view program, const PickleCheckContext& context) {
  return PickleChecker(program, context).run();
}

}  // namespace ppe::detail
