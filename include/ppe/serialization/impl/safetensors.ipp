// Definitions of serialization/safetensors.hpp: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "ppe/detail/read_file.hpp"
#include "ppe/detail/torch_compat/safetensors_dtypes.hpp"
#include "ppe/serialization/safetensors.hpp"

namespace ppe::serialization {
// Not `detail`: inside ppe::serialization that name would hide ppe::detail
// from the files included after this one.
namespace safetensors_impl {

static_assert(std::endian::native == std::endian::little,
              "safetensors files are little-endian; ppe reads and writes them on little-endian machines only");

/// One tensor's entry in a safetensors header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> offsets;
  bool has_dtype = false, has_shape = false, has_offsets = false;
};

/// A parsed safetensors header, before its sizes are checked.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

/// The most dimensions a tensor may have (LibTorch's limit).
inline constexpr std::size_t kSafetensorsMaxDims = 64;
/// The deepest nesting a header may have (its own structure needs 3 levels;
/// unknown fields of a tensor's entry may hold more, as the reference
/// implementation ignores them).
inline constexpr std::size_t kSafetensorsMaxDepth = 64;

/// Reads a header with nlohmann-json's SAX interface into a
/// SafetensorsHeader, refusing at the first value of a wrong kind, so that
/// nothing but the header's own fields is kept. `error` says why a handler
/// stopped the parse.
class SafetensorsHeaderParser {
 public:
  using json = nlohmann::json;
  explicit SafetensorsHeaderParser(SafetensorsHeader& out) : out_(out) {}
  std::string error;

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (v >= 0) return number_unsigned(static_cast<json::number_unsigned_t>(v));
    return scalar("a negative number");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (stack_.empty()) return scalar("a number");
    switch (stack_.back()) {
      case Ctx::Shape:
        if (entry().shape.size() == kSafetensorsMaxDims)
          return fail("tensor '" + entry().name + "': 'shape' has more than " + std::to_string(kSafetensorsMaxDims) +
                      " dimensions");
        entry().shape.push_back(v);
        return true;
      case Ctx::Offsets:
        if (entry().offsets.size() == 2) return fail("tensor '" + entry().name + "': 'data_offsets' has more than 2 numbers");
        entry().offsets.push_back(v);
        return true;
      default:
        return scalar("a number");
    }
  }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar("a number that is no integer"); }
  bool binary(json::binary_t&) { return scalar("binary data"); }
  bool string(json::string_t& v) {
    if (!stack_.empty() && stack_.back() == Ctx::Metadata) {
      out_.metadata[key_] = std::move(v);
      return true;
    }
    if (!stack_.empty() && stack_.back() == Ctx::Tensor && key_ == "dtype") {
      entry().dtype = std::move(v);
      entry().has_dtype = true;
      return true;
    }
    return scalar("a string");
  }
  bool start_object(std::size_t) {
    if (stack_.size() == kSafetensorsMaxDepth) return fail("nested deeper than " + std::to_string(kSafetensorsMaxDepth) + " levels");
    if (stack_.empty()) return push(Ctx::Root);
    switch (stack_.back()) {
      case Ctx::Root:
        if (key_ == "__metadata__") return push(Ctx::Metadata);
        out_.entries.emplace_back();
        entry().name = key_;
        return push(Ctx::Tensor);
      case Ctx::Tensor:
        if (known_field()) return fail(field_kind_error());
        return push(Ctx::Skip);
      case Ctx::Skip:
        return push(Ctx::Skip);
      default:
        return scalar("an object");
    }
  }
  bool start_array(std::size_t) {
    if (stack_.size() == kSafetensorsMaxDepth) return fail("nested deeper than " + std::to_string(kSafetensorsMaxDepth) + " levels");
    if (!stack_.empty() && stack_.back() == Ctx::Tensor) {
      if (key_ == "shape") {
        entry().has_shape = true;
        return push(Ctx::Shape);
      }
      if (key_ == "data_offsets") {
        entry().has_offsets = true;
        return push(Ctx::Offsets);
      }
      if (key_ == "dtype") return fail(field_kind_error());
      return push(Ctx::Skip);
    }
    if (!stack_.empty() && stack_.back() == Ctx::Skip) return push(Ctx::Skip);
    return scalar("an array");
  }
  bool key(json::string_t& k) {
    switch (stack_.back()) {
      case Ctx::Root:
        if (!names_.insert(k).second) return fail("the name '" + k + "' is there twice");
        break;
      case Ctx::Metadata:
        if (out_.metadata.count(k)) return fail("__metadata__: the key '" + k + "' is there twice");
        break;
      case Ctx::Tensor:
        if (known_field(k) && !fields_.insert(k).second)
          return fail("tensor '" + entry().name + "': the field '" + k + "' is there twice");
        break;
      default:
        break;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    const Ctx ended = stack_.back();
    stack_.pop_back();
    if (ended == Ctx::Tensor) {
      fields_.clear();
      const SafetensorsEntry& e = entry();
      const char* missing = !e.has_dtype ? "dtype" : !e.has_shape ? "shape" : !e.has_offsets ? "data_offsets" : nullptr;
      if (missing) return fail("tensor '" + e.name + "' has no '" + missing + "'");
    }
    return true;
  }
  bool end_array() {
    const Ctx ended = stack_.back();
    stack_.pop_back();
    if (ended == Ctx::Offsets && entry().offsets.size() != 2)
      return fail("tensor '" + entry().name + "': 'data_offsets' has " + std::to_string(entry().offsets.size()) +
                  " numbers, expected 2 (begin and end)");
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    // nlohmann's message ("[json.exception.parse_error.101] parse error at
    // line 1, column 9: ...") without its prefix.
    std::string what = ex.what();
    if (const auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);
    return fail("no valid JSON at byte " + std::to_string(position) + " of the header: " + what);
  }

 private:
  enum class Ctx { Root, Metadata, Tensor, Shape, Offsets, Skip };

  bool push(Ctx c) {
    stack_.push_back(c);
    return true;
  }
  bool fail(std::string why) {
    error = std::move(why);
    return false;
  }
  SafetensorsEntry& entry() { return out_.entries.back(); }
  static bool known_field(std::string_view k) { return k == "dtype" || k == "shape" || k == "data_offsets"; }
  bool known_field() const { return known_field(key_); }
  std::string field_kind_error() {
    return "tensor '" + entry().name + "': '" + key_ + "' is not " + (key_ == "dtype" ? "a string" : "an array of integers");
  }
  // A value where the header's structure wants another kind (`what` is the
  // kind found); inside an unknown field of a tensor's entry, anything goes.
  bool scalar(const char* what) {
    if (stack_.empty()) return fail(std::string("the header is ") + what + ", not a JSON object");
    switch (stack_.back()) {
      case Ctx::Skip:
        return true;
      case Ctx::Root:
        if (key_ == "__metadata__") return fail(std::string("__metadata__ is ") + what + ", not an object");
        return fail("the entry '" + key_ + "' is " + what + ", not an object");
      case Ctx::Metadata:
        return fail("__metadata__: the value of '" + key_ + "' is " + what + ", not a string");
      case Ctx::Tensor:
        if (known_field()) return fail(field_kind_error());
        return true;  // an unknown field: ignored, as the reference implementation does
      case Ctx::Shape:
        return fail("tensor '" + entry().name + "': 'shape' holds " + what + ", not a dimension (an integer >= 0)");
      case Ctx::Offsets:
        return fail("tensor '" + entry().name + "': 'data_offsets' holds " + what + ", not a byte offset (an integer >= 0)");
    }
    return false;
  }

  SafetensorsHeader& out_;
  std::vector<Ctx> stack_;
  std::string key_;
  std::set<std::string> names_;
  std::set<std::string> fields_;
};

[[noreturn]] inline void safetensors_corrupt(std::string_view source, const std::string& why) {
  throw CorruptFileError("ppe: cannot read " + std::string(source) + " (safetensors): " + why);
}

/// The bits of one element of the safetensors dtype `name`, or 0 for a name
/// the format does not define.
inline std::uint64_t safetensors_bits(std::string_view name) {
  if (name == "F4") return 4;
  if (name == "F6_E2M3" || name == "F6_E3M2") return 6;
  if (name == "BOOL" || name == "U8" || name == "I8" || name.starts_with("F8_")) return 8;
  if (name == "I16" || name == "U16" || name == "F16" || name == "BF16") return 16;
  if (name == "I32" || name == "U32" || name == "F32") return 32;
  if (name == "I64" || name == "U64" || name == "F64" || name == "C64") return 64;
  return 0;
}

/// One tensor of a checked header: where its bytes are, and what they make.
struct SafetensorsSlot {
  const SafetensorsEntry* entry;
  std::uint64_t begin, bytes;
  std::vector<std::int64_t> sizes;
  c10::ScalarType type;
};

/// Parses and checks the header `json` of a file whose data section holds
/// `data_size` bytes: every tensor's byte range within the data, in order,
/// without overlap or hole, each the size its shape and dtype make, and a
/// LibTorch type for each. Allocates nothing beyond the header's own parse.
inline std::vector<SafetensorsSlot> check_safetensors_header(std::string_view json, std::uint64_t data_size,
                                                             std::string_view source, SafetensorsHeader& header) {
  SafetensorsHeaderParser parser(header);
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &parser, nlohmann::json::input_format_t::json,
                                            /*strict=*/true);
  if (!ok) safetensors_corrupt(source, parser.error.empty() ? "the header is no valid JSON" : parser.error);
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : header.entries) order.push_back(&e);
  // By byte offsets (the reference implementation's order), names breaking ties.
  std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    return std::tie(a->offsets[0], a->offsets[1], a->name) < std::tie(b->offsets[0], b->offsets[1], b->name);
  });
  auto range = [](const SafetensorsEntry& e) {
    return "data_offsets [" + std::to_string(e.offsets[0]) + ", " + std::to_string(e.offsets[1]) + "]";
  };
  std::vector<SafetensorsSlot> slots;
  std::uint64_t expected = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry* e : order) {
    const std::string tensor = "tensor '" + e->name + "': ";
    const std::uint64_t begin = e->offsets[0], end = e->offsets[1];
    if (end < begin) safetensors_corrupt(source, tensor + range(*e) + " end before they begin");
    if (end > data_size)
      safetensors_corrupt(source, tensor + range(*e) + " reach past the data, which holds " + std::to_string(data_size) +
                                      " bytes");
    if (begin > expected)
      safetensors_corrupt(source, tensor + range(*e) + ": bytes [" + std::to_string(expected) + ", " +
                                      std::to_string(begin) + ") of the data belong to no tensor");
    if (begin < expected)
      safetensors_corrupt(source, tensor + range(*e) + " overlap tensor '" + previous->name + "' (" + range(*previous) +
                                      ")");
    expected = end;
    previous = e;
    const std::uint64_t bits = safetensors_bits(e->dtype);
    if (bits == 0) {
      std::string known;
      for (const auto name : ::ppe::detail::compat::kSafetensorsDtypes) known += (known.empty() ? "" : ", ") + std::string(name);
      safetensors_corrupt(source, tensor + "unknown dtype '" + e->dtype + "' (the format's: " + known + ")");
    }
    std::uint64_t elements = 1;
    std::string shape;
    bool overflow = false;
    for (const std::uint64_t d : e->shape) {
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) overflow = true;
      if (d != 0 && elements > std::numeric_limits<std::uint64_t>::max() / d) overflow = true;
      if (!overflow) elements *= d;
    }
    if (overflow || elements > std::numeric_limits<std::uint64_t>::max() / bits)
      safetensors_corrupt(source, tensor + "shape [" + shape + "] has more elements than a tensor can");
    const std::uint64_t total_bits = elements * bits;
    if (total_bits % 8 != 0)
      safetensors_corrupt(source, tensor + "shape [" + shape + "] of " + e->dtype + " is not a whole number of bytes");
    if (total_bits / 8 != end - begin)
      safetensors_corrupt(source, tensor + "shape [" + shape + "] of " + e->dtype + " makes " +
                                      std::to_string(total_bits / 8) + " bytes, its " + range(*e) + " hold " +
                                      std::to_string(end - begin));
    slots.push_back({e, begin, end - begin, {}, c10::ScalarType::Undefined});
    for (const std::uint64_t d : e->shape) slots.back().sizes.push_back(static_cast<std::int64_t>(d));
  }
  if (expected != data_size)
    safetensors_corrupt(source, "the tensors' bytes end at byte " + std::to_string(expected) + " of the data, which holds " +
                                    std::to_string(data_size) + " bytes");
  // The file is well formed; a dtype this LibTorch lacks is another error.
  for (auto& slot : slots) {
    const auto type = ::ppe::detail::compat::scalar_type_of_safetensors(slot.entry->dtype);
    if (!type)
      throw std::invalid_argument("ppe: " + std::string(source) + ": tensor '" + slot.entry->name + "' has dtype " +
                                  slot.entry->dtype + ", which this LibTorch (" + TORCH_VERSION +
                                  ") has no type for");
    slot.type = *type;
  }
  return slots;
}

/// A file mapped copy-on-write: what the tensors viewing it keep alive.
class SafetensorsMapping {
 public:
  SafetensorsMapping(void* data, std::size_t size) : data_(data), size_(size) {}
  SafetensorsMapping(const SafetensorsMapping&) = delete;
  SafetensorsMapping& operator=(const SafetensorsMapping&) = delete;
  ~SafetensorsMapping() { ::munmap(data_, size_); }
  char* data() const noexcept { return static_cast<char*>(data_); }
  std::size_t size() const noexcept { return size_; }

 private:
  void* data_;
  std::size_t size_;
};

/// Builds the tensors of a checked file whose bytes are `bytes`. `owner`
/// (when set) keeps `bytes` alive: tensors whose bytes are aligned for their
/// type view them; the others, and all when there is no owner, are copied.
inline SafetensorsFile make_safetensors(std::string_view bytes, const std::shared_ptr<void>& owner,
                                        std::string_view source) {
  if (bytes.size() < 8)
    safetensors_corrupt(source, "the file has " + std::to_string(bytes.size()) +
                                    " bytes, fewer than the 8 of the header's length");
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kSafetensorsMaxHeader)
    safetensors_corrupt(source, "the header's length is " + std::to_string(n) + " bytes, more than the most (" +
                                    std::to_string(kSafetensorsMaxHeader) + ")");
  if (n > bytes.size() - 8)
    safetensors_corrupt(source, "the header's length is " + std::to_string(n) + " bytes, the file holds " +
                                    std::to_string(bytes.size() - 8) + " after it");
  SafetensorsHeader header;
  const auto slots = check_safetensors_header(bytes.substr(8, n), bytes.size() - 8 - n, source, header);
  const char* data = bytes.data() + 8 + n;
  SafetensorsFile file;
  file.metadata = std::move(header.metadata);
  for (const auto& slot : slots) {
    const char* at = data + slot.begin;
    const auto options = at::TensorOptions().dtype(slot.type);
    if (slot.type == c10::ScalarType::Bool)
      for (std::uint64_t i = 0; i < slot.bytes; ++i)
        if (static_cast<unsigned char>(at[i]) > 1)
          safetensors_corrupt(source, "tensor '" + slot.entry->name + "': BOOL element " + std::to_string(i) + " is byte " +
                                          std::to_string(static_cast<unsigned char>(at[i])) + " (expected 0 or 1)");
    at::Tensor t;
    const auto align = static_cast<std::uintptr_t>(c10::elementSize(slot.type));
    if (owner && slot.bytes > 0 && reinterpret_cast<std::uintptr_t>(at) % align == 0) {
      t = at::from_blob(const_cast<char*>(at), slot.sizes, [owner](void*) {}, options);
    } else {
      t = at::empty(slot.sizes, options);
      if (slot.bytes > 0) std::memcpy(t.data_ptr(), at, slot.bytes);
    }
    file.tensors.emplace_back(slot.entry->name, std::move(t));
  }
  return file;
}

}  // namespace safetensors_impl

PPE_DECL const at::Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

PPE_DECL SafetensorsFile safetensors_loads(std::string_view bytes, std::string_view source) {
  return safetensors_impl::make_safetensors(bytes, nullptr, source);
}

PPE_DECL SafetensorsFile load_safetensors(const std::filesystem::path& path, const SafetensorsReadOptions& options) {
  const std::string source = path.string();
  if (options.mapping() != SafetensorsMapping::Read) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw std::system_error(err, std::generic_category(), "ppe: cannot open " + source);
    }
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    const auto size = regular ? static_cast<std::size_t>(st.st_size) : 0;
    const bool map = regular && size >= 8 && (options.mapping() == SafetensorsMapping::Map || size >= (std::size_t{1} << 20));
    void* data = map ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    const int err = errno;
    ::close(fd);
    if (data != MAP_FAILED) {
      auto mapping = std::make_shared<safetensors_impl::SafetensorsMapping>(data, size);
      return safetensors_impl::make_safetensors(std::string_view(mapping->data(), size), mapping, source);
    }
    if (options.mapping() == SafetensorsMapping::Map && map)
      throw std::system_error(err, std::generic_category(), "ppe: cannot map " + source);
  }
  // Read whole: the tensors view the buffer (kept alive by them).
  auto buffer = std::make_shared<std::string>(::ppe::detail::read_file(path));
  return safetensors_impl::make_safetensors(*buffer, buffer, source);
}

namespace safetensors_impl {

/// A tensor to write: its name, its dtype's name and rank in the reference
/// implementation's order.
struct SafetensorsItem {
  const std::string* name;
  const at::Tensor* tensor;
  std::string_view dtype;
  std::size_t rank;
  std::uint64_t bytes;
};

/// The tensors in the order the reference implementation writes them
/// (descending dtype rank, then name), and the header (padded with spaces
/// to a multiple of 8 bytes), for `write_safetensors` and
/// `safetensors_dumps`.
inline std::pair<std::vector<SafetensorsItem>, std::string> safetensors_layout(
    const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  namespace compat = ::ppe::detail::compat;
  std::vector<SafetensorsItem> items;
  std::set<std::string_view> names;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      throw std::invalid_argument("ppe::serialization::write_safetensors: a tensor may not be named '__metadata__'");
    if (!names.insert(name).second)
      throw std::invalid_argument("ppe::serialization::write_safetensors: two tensors are named '" + name + "'");
    if (!tensor.defined())
      throw std::invalid_argument("ppe::serialization::write_safetensors: tensor '" + name + "' is undefined");
    const std::string_view dtype = compat::safetensors_name_of(tensor.scalar_type());
    if (dtype.empty())
      throw std::invalid_argument("ppe::serialization::write_safetensors: tensor '" + name + "' has dtype " +
                                  std::string(c10::toString(tensor.scalar_type())) +
                                  ", which the safetensors format has no name for");
    const auto rank = static_cast<std::size_t>(
        std::find(compat::kSafetensorsDtypes.begin(), compat::kSafetensorsDtypes.end(), dtype) -
        compat::kSafetensorsDtypes.begin());
    items.push_back({&name, &tensor, dtype, rank,
                     static_cast<std::uint64_t>(tensor.numel()) * static_cast<std::uint64_t>(tensor.element_size())});
  }
  std::sort(items.begin(), items.end(), [](const SafetensorsItem& a, const SafetensorsItem& b) {
    if (a.rank != b.rank) return a.rank > b.rank;
    return *a.name < *b.name;
  });
  // JSON strings as serde_json writes them (nlohmann escapes the same
  // characters the same way); names that are no UTF-8 are refused.
  auto quoted = [](const std::string& s, const char* what) {
    try {
      return nlohmann::json(s).dump();
    } catch (const nlohmann::json::exception&) {
      throw std::invalid_argument(std::string("ppe::serialization::write_safetensors: ") + what + " '" + s +
                                  "' is not valid UTF-8");
    }
  };
  std::string header = "{";
  if (!metadata.empty()) {
    // The reference implementation writes its metadata in a hash map's
    // order; ppe writes it sorted by key.
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + quoted(k, "the metadata key") + ":" + quoted(v, "the metadata value");
      first = false;
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const auto& item : items) {
    if (header.size() > 1) header += ",";
    header += quoted(*item.name, "the tensor name") + ":{\"dtype\":\"" + std::string(item.dtype) + "\",\"shape\":[";
    for (std::int64_t d = 0; d < item.tensor->dim(); ++d)
      header += (d ? "," : "") + std::to_string(item.tensor->size(d));
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + item.bytes) + "]}";
    offset += item.bytes;
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  return {std::move(items), std::move(header)};
}

/// Calls `put(data, size)` with the file's bytes in order: the header's
/// length, the header, each tensor's bytes (a contiguous CPU copy where the
/// tensor is neither).
template <class Put>
void emit_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata, Put put) {
  const auto [items, header] = safetensors_layout(tensors, metadata);
  const std::uint64_t n = header.size();
  put(reinterpret_cast<const char*>(&n), sizeof n);
  put(header.data(), header.size());
  for (const auto& item : items) {
    if (item.bytes == 0) continue;
    const at::Tensor t = item.tensor->is_cpu() ? item.tensor->contiguous() : item.tensor->cpu().contiguous();
    put(static_cast<const char*>(t.data_ptr()), item.bytes);
  }
}

}  // namespace safetensors_impl

PPE_DECL void write_safetensors(std::ostream& os, const NamedTensors& tensors,
                                const std::map<std::string, std::string>& metadata) {
  safetensors_impl::emit_safetensors(tensors, metadata, [&os](const char* data, std::uint64_t size) {
    os.write(data, static_cast<std::streamsize>(size));
    if (!os) throw std::runtime_error("ppe::serialization::write_safetensors: the output stream failed");
  });
}

PPE_DECL std::string safetensors_dumps(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::string out;
  safetensors_impl::emit_safetensors(tensors, metadata, [&out](const char* data, std::uint64_t size) { out.append(data, size); });
  return out;
}

}  // namespace ppe::serialization
