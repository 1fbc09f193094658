#pragma once
/// \file
/// `detail::rewrite_python_pickle`: turns a Python pickle program (protocol 2
/// or 3, as `torch.save` writes it) into the subset LibTorch 1.13's C++
/// unpickler reads. Plain text processing: no LibTorch header is needed.
///
/// The C++ unpickler lacks APPEND and SETITEM (Python's encoding of
/// one-element lists and one-item dicts), reads `collections.OrderedDict()`
/// (every `state_dict()`) as None, and cannot apply BUILD to a dict. So:
///  - `item APPEND` becomes `MARK item APPENDS`, `key value SETITEM` becomes
///    `MARK key value SETITEMS`;
///  - `OrderedDict () REDUCE` becomes `EMPTY_DICT`;
///  - `state BUILD` on such a dict is dropped with its state (an OrderedDict's
///    state is its attributes, e.g. a state_dict's `_metadata`);
///  - an integer beyond 32 bits, which Python writes as LONG1 with as few
///    bytes as it needs, gets the 8 bytes LibTorch reads.
/// Memo slots written inside dropped code must not be read outside it.
///
/// `detail::find_unsupported_global` reads the same programs to name a Python
/// object no State can hold (a `collections.Counter`, a `functools.partial`)
/// and where it sits, for the error of a file LibTorch's reader refuses.

#include <optional>
#include <string>
#include <string_view>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// Rewrites a Python pickle program for LibTorch's unpickler (see the file
/// comment); nullopt when nothing needs rewriting or it cannot be followed
/// (an opcode of protocol 4 or 5 or an unknown one, a truncated program, a
/// read of a dropped memo slot): LibTorch then reports the problem itself.
PPE_DECL std::optional<std::string> rewrite_python_pickle(std::string_view in);

/// A Python object in a pickle program that no State can hold.
struct UnsupportedGlobal {
  std::string global;  ///< the class or function that makes it: `collections.Counter`
  std::string path;    ///< the keys (list indices) down to it: `lr_scheduler/milestones`; empty at the top
};

/// The first GLOBAL in a pickle program (protocol 2 or 3) that a State
/// cannot hold: any but LibTorch's own (`torch.*`) and
/// `collections.OrderedDict`. Nullopt when there is none, or when the program
/// cannot be followed.
PPE_DECL std::optional<UnsupportedGlobal> find_unsupported_global(std::string_view program);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/serialization/impl/python_pickle.ipp"
#endif
