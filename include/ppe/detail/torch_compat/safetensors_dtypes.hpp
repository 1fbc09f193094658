#pragma once
/// \file
/// The safetensors format's dtype names and the LibTorch scalar types they
/// name, for the types this LibTorch has: the 8-bit floats came in LibTorch
/// 2.1 and 2.2, the unsigned 16-, 32- and 64-bit integers in 2.3, the E8M0
/// float in 2.7. Each is asked of `c10::ScalarType` itself (does it have the
/// enumerator?), which is exact for every release in between.

#include <c10/core/ScalarType.h>

#include <array>
#include <optional>
#include <string_view>

namespace ppe::detail::compat {

/// Every dtype name the safetensors format defines, in the order of its
/// reference implementation's `Dtype` enum (increasing alignment): its
/// writer lays tensors out in the descending order of this rank, then by
/// name.
inline constexpr std::array<std::string_view, 22> kSafetensorsDtypes{
    "BOOL", "F4",  "F6_E2M3", "F6_E3M2", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
    "I16",  "U16", "F16",     "BF16",    "I32", "U32", "F32",     "C64",     "F64",     "I64",         "U64"};

/// The LibTorch type of the safetensors dtype `name`, or nullopt when this
/// LibTorch has none (or the format does not define the name). `ST` is
/// `c10::ScalarType`, a template parameter only so that the enumerators a
/// LibTorch lacks are asked for, not named.
template <class ST = c10::ScalarType>
std::optional<ST> scalar_type_of_safetensors(std::string_view name) {
  if (name == "BOOL") return ST::Bool;
  if (name == "U8") return ST::Byte;
  if (name == "I8") return ST::Char;
  if (name == "I16") return ST::Short;
  if (name == "I32") return ST::Int;
  if (name == "I64") return ST::Long;
  if (name == "F16") return ST::Half;
  if (name == "BF16") return ST::BFloat16;
  if (name == "F32") return ST::Float;
  if (name == "F64") return ST::Double;
  if (name == "C64") return ST::ComplexFloat;
  if constexpr (requires { ST::Float8_e5m2; })
    if (name == "F8_E5M2") return ST::Float8_e5m2;
  if constexpr (requires { ST::Float8_e4m3fn; })
    if (name == "F8_E4M3") return ST::Float8_e4m3fn;
  if constexpr (requires { ST::Float8_e5m2fnuz; })
    if (name == "F8_E5M2FNUZ") return ST::Float8_e5m2fnuz;
  if constexpr (requires { ST::Float8_e4m3fnuz; })
    if (name == "F8_E4M3FNUZ") return ST::Float8_e4m3fnuz;
  if constexpr (requires { ST::Float8_e8m0fnu; })
    if (name == "F8_E8M0") return ST::Float8_e8m0fnu;
  if constexpr (requires { ST::UInt16; })
    if (name == "U16") return ST::UInt16;
  if constexpr (requires { ST::UInt32; })
    if (name == "U32") return ST::UInt32;
  if constexpr (requires { ST::UInt64; })
    if (name == "U64") return ST::UInt64;
  return std::nullopt;
}

/// The safetensors dtype name of the LibTorch type `type`, or "" when the
/// format has none for it (quantized types, complex doubles, ...).
inline std::string_view safetensors_name_of(c10::ScalarType type) {
  for (const std::string_view name : kSafetensorsDtypes)
    if (scalar_type_of_safetensors(name) == type) return name;
  return {};
}

}  // namespace ppe::detail::compat
