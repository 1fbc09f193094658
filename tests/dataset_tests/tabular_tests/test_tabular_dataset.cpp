// Ports PPE 0.9.0's tests/pytorch_pfn_extras_tests/dataset_tests/tabular_tests/: dummy_dataset.py,
// test_asmode.py, test_concat.py, test_join.py, test_slice.py, test_transform.py,
// test_with_converter.py, test_from_data.py, test_delegate_dataset.py, test_tabular_dataset.py and
// test_with_torch_dataloader.py (their parameter tables), plus the examples of PPE's docstrings
// (TabularDataset, DelegateDataset) and the C++ additions (range-v3, LibTorch adapters, messages).
// Expected values are computed from the dummy data with tensor operations, as PPE's tests do.
#include "ppe_test.hpp"

#include <ppe/dataset/tabular.hpp>

#include <range/v3/range/concepts.hpp>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/transform.hpp>

#include <optional>
#include <ranges>

// One namespace per test file: the tests build as a unity build (tests/meson.build).
namespace ppe_test_dataset_tests_tabular_tests_test_tabular_dataset {

namespace {

namespace tab = ppe::dataset::tabular;
using tab::Mode;
using tab::Rows;
using tab::Slice;

const Mode kModes[] = {Mode::Tuple, Mode::Dict, Mode::Unary};

using Callback = std::function<void(const Rows&, const tab::KeyIndices&)>;

struct DummyOptions {
  std::int64_t size = 10;
  std::vector<std::string> keys = {"a", "b", "c"};
  Mode mode = Mode::Tuple;
  bool return_array = false;
  Callback callback = {};
  bool convert = false;
};

// PPE's DummyDataset: uniform random data of shape (keys, size); get_examples
// returns its rows as tensors (return_array) or lists of doubles.
class DummyDataset : public tab::TabularDataset {
 public:
  explicit DummyDataset(DummyOptions o = {}) : o_(std::move(o)) {
    if (o_.mode == Mode::Unary) o_.keys.resize(1);
    data = torch::rand({static_cast<std::int64_t>(o_.keys.size()), o_.size}, torch::kDouble);
  }
  at::Tensor data;

  std::int64_t size() const override { return data.size(1); }
  const std::vector<std::string>& keys() const override { return o_.keys; }
  Mode mode() const override { return o_.mode; }
  std::vector<tab::Column> get_examples(const Rows& rows, const tab::KeyIndices& key_indices) const override {
    if (o_.callback) o_.callback(rows, key_indices);
    at::Tensor d = data;
    if (!rows.is_all()) d = d.index_select(1, torch::tensor(row_list(rows, size()), torch::kLong));
    if (key_indices) {
      std::vector<std::int64_t> k(key_indices->begin(), key_indices->end());
      d = d.index_select(0, torch::tensor(k, torch::kLong));
    }
    std::vector<tab::Column> out;
    for (std::int64_t i = 0; i < d.size(0); ++i) {
      if (o_.return_array) {
        out.emplace_back(d[i].clone());
      } else {
        std::vector<tab::Value> values;
        for (std::int64_t j = 0; j < d.size(1); ++j) values.emplace_back(d[i][j].item<double>());
        out.emplace_back(std::move(values));
      }
    }
    return out;
  }
  tab::Columns convert(const tab::Columns& d) const override {
    if (o_.convert) return converted();
    return TabularDataset::convert(d);
  }

  // The rows of a slice or list, computed directly (Python's range semantics).
  static std::vector<std::int64_t> row_list(const Rows& rows, std::int64_t n) {
    if (rows.kind() == Rows::Kind::List) return rows.list();
    const auto b = rows.slice().indices(n);
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < b.length(); ++i) out.push_back(b[i]);
    return out;
  }
  // PPE's sentinel "converted".
  static tab::Columns converted() { return tab::Columns(Mode::Unary, {"converted"}, {tab::Column()}); }

 private:
  DummyOptions o_;
};

bool is_converted(const tab::Columns& c) { return c.keys() == std::vector<std::string>{"converted"}; }

// get_examples' output as a record for convert (PPE's tests pass the tuple of columns).
tab::Columns as_columns(const std::vector<tab::Column>& output) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < output.size(); ++i) keys.push_back(std::to_string(i));
  return tab::Columns(Mode::Tuple, keys, output);
}

// Every column of `output` equals the row of `expected` (2-d) at its position,
// and is a tensor column iff `array`.
void check_columns(const std::vector<tab::Column>& output, const at::Tensor& expected, bool array) {
  REQUIRE(static_cast<std::int64_t>(output.size()) == expected.size(0));
  for (std::size_t i = 0; i < output.size(); ++i) {
    CHECK(output[i].is_array() == array);
    const at::Tensor got = output[i].to_tensor();
    CHECK(got.sizes() == expected[static_cast<std::int64_t>(i)].sizes());
    CHECK(torch::equal(got.to(torch::kDouble), expected[static_cast<std::int64_t>(i)]));
  }
}

at::Tensor select_rows(const at::Tensor& data, const std::vector<std::int64_t>& rows) {
  return data.index_select(1, torch::tensor(rows, torch::kLong));
}
at::Tensor select_keys(const at::Tensor& data, const std::vector<std::size_t>& keys) {
  return data.index_select(0, torch::tensor(std::vector<std::int64_t>(keys.begin(), keys.end()), torch::kLong));
}

// A callback that fails when called unless `expected` rows/keys are given.
Callback expect_call(std::optional<Rows> rows, std::optional<tab::KeyIndices> keys, std::string name) {
  return [rows, keys, name](const Rows& r, const tab::KeyIndices& k) {
    INFO("dataset " << name << " called with rows " << r);
    REQUIRE(rows.has_value());
    CHECK(r == *rows);
    if (keys) CHECK(k == *keys);
  };
}

}  // namespace

// ---- test_tabular_dataset.py ----------------------------------------------------------------------

TEST_CASE("tabular: fetch, convert, get_example and iteration (PPE test_tabular_dataset)") {
  for (const Mode mode : kModes)
    for (const bool return_array : {true, false}) {
      CAPTURE(tab::mode_name(mode));
      CAPTURE(return_array);
      auto ds = std::make_shared<DummyDataset>(DummyOptions{
          .mode = mode, .return_array = return_array, .callback = expect_call(Rows::all(), tab::KeyIndices(), "a")});
      const tab::Columns fetched = ds->fetch();
      CHECK(fetched.mode() == mode);
      CHECK(fetched.keys() == ds->keys());
      check_columns(fetched.values(), ds->data, return_array);

      const tab::Columns converted = ds->convert(fetched);
      check_columns(converted.values(), ds->data, true);  // convert turns every column into a tensor

      auto ds3 = std::make_shared<DummyDataset>(DummyOptions{
          .mode = mode, .return_array = return_array, .callback = expect_call(Rows{3}, tab::KeyIndices(), "a")});
      const tab::Example ex = ds3->get_example(3);
      CHECK(ex.mode() == mode);
      REQUIRE(ex.size() == ds3->keys().size());
      for (std::size_t k = 0; k < ex.size(); ++k) CHECK(ex.get<double>(k) == ds3->data[k][3].item<double>());
      if (mode == Mode::Dict) CHECK(ex.get<double>("b") == ds3->data[1][3].item<double>());
      if (mode == Mode::Unary) CHECK(std::get<double>(ex.value()) == ds3->data[0][3].item<double>());

      auto plain = std::make_shared<DummyDataset>(DummyOptions{.mode = mode, .return_array = return_array});
      std::int64_t i = 0;
      for (const tab::Example& e : *plain) {
        for (std::size_t k = 0; k < e.size(); ++k) CHECK(e.get<double>(k) == plain->data[k][i].item<double>());
        ++i;
      }
      CHECK(i == 10);
    }
}

TEST_CASE("tabular: PPE's TabularDataset docstring example (slice by rows and keys, astuple, asdict)") {
  // MyDataset: 4 rows of keys a, b, c holding arange(12).reshape(4, 3).
  struct MyDataset : tab::TabularDataset {
    std::vector<std::string> k{"a", "b", "c"};
    std::int64_t size() const override { return 4; }
    const std::vector<std::string>& keys() const override { return k; }
    Mode mode() const override { return Mode::Tuple; }
    std::vector<tab::Column> get_examples(const Rows& rows, const tab::KeyIndices& key_indices) const override {
      at::Tensor d = torch::arange(12).reshape({4, 3});
      if (!rows.is_all()) d = d.index_select(0, torch::tensor(DummyDataset::row_list(rows, 4), torch::kLong));
      std::vector<tab::Column> out;
      for (const auto c : key_indices.value_or(std::vector<std::size_t>{0, 1, 2}))
        out.emplace_back(d.select(1, static_cast<std::int64_t>(c)).contiguous());
      return out;
    }
  };
  auto dataset = std::make_shared<MyDataset>();
  CHECK(dataset->size() == 4);
  CHECK(dataset->astuple()->get_example(0) == tab::Example(Mode::Tuple, {"a", "b", "c"}, {0, 1, 2}));
  CHECK(dataset->asdict()->get_example(0) == tab::Example(Mode::Dict, {"a", "b", "c"}, {0, 1, 2}));
  auto view = dataset->slice(Rows{3, 2}, {"c", 0});
  CHECK(view->size() == 2);
  CHECK(view->keys() == std::vector<std::string>{"c", "a"});
  CHECK(view->astuple()->get_example(1) == tab::Example(Mode::Tuple, {"c", "a"}, {8, 6}));
  const auto d = view->asdict()->get_example(1);
  CHECK(d.get<std::int64_t>("a") == 6);
  CHECK(d.get<std::int64_t>("c") == 8);
  // PPE's dataset[slice] and dataset[list].
  const auto list = dataset->get_example_list(Rows{-1, 0});
  REQUIRE(list.size() == 2);
  CHECK(list[0] == tab::Example(Mode::Tuple, {"a", "b", "c"}, {9, 10, 11}));
  CHECK(dataset->get_example_list(Slice(std::nullopt, std::nullopt, -2)).at(1) ==
        tab::Example(Mode::Tuple, {"a", "b", "c"}, {3, 4, 5}));
}

// ---- test_asmode.py, test_with_converter.py, test_delegate_dataset.py -----------------------------

TEST_CASE("tabular: astuple and asdict (PPE test_asmode)") {
  for (const Mode mode : kModes) {
    CAPTURE(tab::mode_name(mode));
    auto ds = std::make_shared<DummyDataset>(DummyOptions{.mode = mode, .convert = true});
    for (const Mode target : {Mode::Tuple, Mode::Dict}) {
      auto view = target == Mode::Tuple ? ds->astuple() : ds->asdict();
      CHECK(view->size() == ds->size());
      CHECK(view->keys() == ds->keys());
      CHECK(view->mode() == target);
      CHECK(view->get_examples(Rows(), std::nullopt) == ds->get_examples(Rows(), std::nullopt));
      CHECK(is_converted(view->convert(view->fetch())));
    }
  }
}

TEST_CASE("tabular: with_converter (PPE test_with_converter)") {
  for (const Mode mode : kModes) {
    CAPTURE(tab::mode_name(mode));
    auto ds = std::make_shared<DummyDataset>(DummyOptions{.mode = mode});
    int calls = 0;
    auto view = ds->with_converter([&](const tab::Columns& data) {
      ++calls;
      CHECK(data.mode() == mode);
      CHECK(data.keys() == ds->keys());
      check_columns(data.values(), ds->data, false);
      return DummyDataset::converted();
    });
    CHECK(view->size() == ds->size());
    CHECK(view->keys() == ds->keys());
    CHECK(view->mode() == ds->mode());
    CHECK(view->get_examples(Rows(), std::nullopt) == ds->get_examples(Rows(), std::nullopt));
    CHECK(is_converted(view->convert(view->fetch())));
    CHECK(calls == 1);
    // The converter passes through later views (PPE: slice, asmode, transform forward convert).
    CHECK(is_converted(view->slice(Rows{1})->convert(view->fetch())));
  }
}

TEST_CASE("tabular: DelegateDataset (PPE test_delegate_dataset)") {
  for (const Mode mode : kModes) {
    auto inner = std::make_shared<DummyDataset>(DummyOptions{.mode = mode});
    auto ds = std::make_shared<tab::DelegateDataset>(inner);
    CHECK(ds->size() == inner->size());
    CHECK(ds->keys() == inner->keys());
    CHECK(ds->mode() == inner->mode());
    CHECK(ds->get_example(3) == inner->get_example(3));
  }
}

TEST_CASE("tabular: PPE's DelegateDataset docstring example (from_data with strings and a dict function)") {
  struct MyDataset : tab::DelegateDataset {
    MyDataset()
        : DelegateDataset(tab::from_data(
              {{"a", torch::arange(10)},
               {"b", [](std::int64_t i) { return "b[" + std::to_string(i) + "]"; }},
               {"c", std::vector<std::int64_t>{3, 1, 4, 5, 9, 2, 6, 8, 7, 0}},
               {{"d", "e"}, [](std::int64_t i) {
                  return tab::Dict{{"d", "d[" + std::to_string(i) + "]"}, {"e", "e[" + std::to_string(i) + "]"}};
                }}})) {}
  };
  auto dataset = std::make_shared<MyDataset>();
  CHECK(dataset->size() == 10);
  CHECK(dataset->keys() == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK((*dataset)[0] == tab::Example(Mode::Tuple, {"a", "b", "c", "d", "e"}, {0, "b[0]", 3, "d[0]", "e[0]"}));
  // The default convert cannot make a tensor of strings, and says which column holds them.
  CHECK(ppe_test::error_of([&] { dataset->convert(dataset->fetch()); }).find("'b'") != std::string::npos);
}

// ---- test_concat.py -------------------------------------------------------------------------------

TEST_CASE("tabular: concat (PPE test_concat table)") {
  struct Param {
    std::optional<Rows> indices;  // nullopt: None
    std::optional<Rows> expected_a, expected_b;
    std::vector<std::int64_t> rows;  // the rows of hstack(a, b) expected
  };
  std::vector<std::int64_t> all15(15);
  for (int i = 0; i < 15; ++i) all15[static_cast<std::size_t>(i)] = i;
  const std::vector<Param> params = {
      {std::nullopt, Rows::all(), Rows::all(), all15},
      {Rows{3, 1, 4, 12, 14, 13, 7, 5}, Rows{3, 1, 4, 7, 5}, Rows{2, 4, 3}, {3, 1, 4, 12, 14, 13, 7, 5}},
      {Rows{3, 1, 4}, Rows{3, 1, 4}, std::nullopt, {3, 1, 4}},
      {Rows(Slice(13, 6, -2)), Rows(Slice(9, 6, -2)), Rows(Slice(3, std::nullopt, -2)), {13, 11, 9, 7}},
      {Rows(Slice(9, std::nullopt, -2)), Rows(Slice(9, std::nullopt, -2)), std::nullopt, {9, 7, 5, 3, 1}},
      {Rows{1, 2, 1}, Rows{1, 2, 1}, std::nullopt, {1, 2, 1}},
      {Rows(std::vector<std::int64_t>{}), std::nullopt, std::nullopt, {}},
  };
  for (const Mode mode_a : kModes)
    for (const Mode mode_b : kModes)
      for (const bool return_array : {true, false})
        for (const auto& p : params) {
          CAPTURE(tab::mode_name(mode_a));
          CAPTURE(tab::mode_name(mode_b));
          CAPTURE(return_array);
          CAPTURE(p.indices.value_or(Rows::all()));
          const std::vector<std::string> abc{"a", "b", "c"}, a{"a"};
          auto ds_a = std::make_shared<DummyDataset>(
              DummyOptions{.keys = mode_b != Mode::Unary ? abc : a, .mode = mode_a, .return_array = return_array,
                           .callback = expect_call(p.expected_a, tab::KeyIndices(), "a"), .convert = true});
          auto ds_b = std::make_shared<DummyDataset>(
              DummyOptions{.size = 5, .keys = mode_a != Mode::Unary ? abc : a, .mode = mode_b,
                           .return_array = return_array, .callback = expect_call(p.expected_b, tab::KeyIndices(), "b")});
          auto view = ds_a->concat(ds_b);
          CHECK(view->size() == ds_a->size() + ds_b->size());
          CHECK(view->keys() == ds_a->keys());
          CHECK(view->mode() == ds_a->mode());
          const auto output = view->get_examples(p.indices.value_or(Rows::all()), std::nullopt);
          const at::Tensor data = select_rows(torch::cat({ds_a->data, ds_b->data}, 1), p.rows);
          // PPE gives lists when both parts contribute; we keep tensors (at::cat) whenever a part did.
          const bool contributed = p.expected_a || p.expected_b;
          check_columns(output, data, return_array && contributed);
          CHECK(is_converted(view->convert(as_columns(output))));
        }
}

TEST_CASE("tabular: concat needs the same keys in the same order (PPE test_concat_key_length/order)") {
  auto a = std::make_shared<DummyDataset>();
  CHECK_THROWS_AS(a->concat(std::make_shared<DummyDataset>(DummyOptions{.keys = {"a", "b"}})), std::invalid_argument);
  CHECK_THROWS_AS(a->concat(std::make_shared<DummyDataset>(DummyOptions{.keys = {"b", "a", "c"}})),
                  std::invalid_argument);
  // Out-of-range rows of a concatenation are an error, not a hole.
  auto b = std::make_shared<DummyDataset>(DummyOptions{.size = 5});
  auto view = a->concat(b);
  CHECK_THROWS_AS(view->get_examples(Rows{3, 15}, std::nullopt), std::out_of_range);
  CHECK_THROWS_AS(view->slice(Rows{15}), std::out_of_range);
  CHECK(view->slice(Rows{-1})->get_example(0).get<double>("c") == b->data[2][4].item<double>());
  CHECK(view->get_example(-15) == a->get_example(0));
}

// ---- test_join.py ---------------------------------------------------------------------------------

TEST_CASE("tabular: join (PPE test_join table)") {
  const std::vector<tab::KeyIndices> key_table = {std::nullopt, std::vector<std::size_t>{0, 4, 1},
                                                  std::vector<std::size_t>{0, 2}, std::vector<std::size_t>{1, 0},
                                                  std::vector<std::size_t>{}};
  for (const Mode mode_a : kModes)
    for (const Mode mode_b : kModes)
      for (const bool return_array : {true, false})
        for (const auto& key_indices : key_table) {
          const std::size_t size_a = mode_a != Mode::Unary ? 3 : 1, size_b = mode_b != Mode::Unary ? 2 : 1;
          if (key_indices && std::any_of(key_indices->begin(), key_indices->end(),
                                         [&](std::size_t k) { return k >= size_a + size_b; }))
            continue;
          CAPTURE(tab::mode_name(mode_a));
          CAPTURE(tab::mode_name(mode_b));
          CAPTURE(return_array);
          // The key indices each part is asked for; a part asked for none must not be called.
          std::optional<tab::KeyIndices> expected_a, expected_b;
          if (!key_indices) {
            expected_a = expected_b = tab::KeyIndices();
          } else {
            std::vector<std::size_t> ka, kb;
            for (const auto k : *key_indices) (k < size_a ? ka : kb).push_back(k < size_a ? k : k - size_a);
            if (!ka.empty()) expected_a = ka;
            if (!kb.empty()) expected_b = kb;
          }
          auto ds_a = std::make_shared<DummyDataset>(DummyOptions{
              .mode = mode_a,
              .return_array = return_array,
              .callback = expect_call(expected_a ? std::optional<Rows>(Rows::all()) : std::nullopt, expected_a, "a"),
              .convert = true});
          auto ds_b = std::make_shared<DummyDataset>(DummyOptions{
              .keys = {"d", "e"},
              .mode = mode_b,
              .return_array = return_array,
              .callback = expect_call(expected_b ? std::optional<Rows>(Rows::all()) : std::nullopt, expected_b, "b")});
          auto view = ds_a->join(ds_b);
          CHECK(view->size() == ds_a->size());
          std::vector<std::string> keys = ds_a->keys();
          keys.insert(keys.end(), ds_b->keys().begin(), ds_b->keys().end());
          CHECK(view->keys() == keys);
          CHECK(view->mode() == (mode_a != Mode::Unary ? mode_a : mode_b != Mode::Unary ? mode_b : Mode::Tuple));
          const auto output = view->get_examples(Rows::all(), key_indices);
          at::Tensor data = torch::cat({ds_a->data, ds_b->data}, 0);
          if (key_indices) data = select_keys(data, *key_indices);
          check_columns(output, data, return_array);
          CHECK(is_converted(view->convert(as_columns(output))));
        }
}

TEST_CASE("tabular: join needs equal lengths and distinct keys (PPE test_join_length/conflict_key)") {
  auto a = std::make_shared<DummyDataset>();
  CHECK_THROWS_AS(a->join(std::make_shared<DummyDataset>(DummyOptions{.size = 5, .keys = {"d", "e"}})),
                  std::invalid_argument);
  const std::string msg =
      ppe_test::error_of([&] { a->join(std::make_shared<DummyDataset>(DummyOptions{.keys = {"a", "d"}})); });
  CHECK(msg.find("unique") != std::string::npos);
  CHECK(msg.find("'a'") != std::string::npos);
}

// ---- test_slice.py --------------------------------------------------------------------------------

TEST_CASE("tabular: slice (PPE test_slice table)") {
  enum class Err { None, Index, Value };  // PPE: IndexError/KeyError -> out_of_range, ValueError -> invalid_argument
  struct KeyCase {
    std::optional<std::variant<tab::Key, std::vector<tab::Key>>> keys;
    std::optional<std::vector<std::string>> expected_keys;
    std::vector<std::size_t> key_positions;  // the keys' positions in (a, b, c)
  };
  using KV = std::vector<tab::Key>;
  using S = std::vector<std::string>;
  const std::vector<KeyCase> tuple_keys = {
      {std::nullopt, S{"a", "b", "c"}, {0, 1, 2}}, {tab::Key(1), S{"b"}, {1}}, {KV{1}, S{"b"}, {1}},
      {tab::Key(3), std::nullopt, {}},           {KV{3}, std::nullopt, {}},  {tab::Key("c"), S{"c"}, {2}},
      {KV{"c"}, S{"c"}, {2}},                    {tab::Key("d"), std::nullopt, {}},
      {KV{"d"}, std::nullopt, {}},               {KV{-1, "a"}, S{"c", "a"}, {2, 0}},
      {KV{}, S{}, {}}};
  const std::vector<KeyCase> unary_keys = {
      {std::nullopt, S{"a"}, {0}}, {tab::Key(0), S{"a"}, {0}},   {KV{0}, S{"a"}, {0}},
      {tab::Key(1), std::nullopt, {}}, {KV{1}, std::nullopt, {}}, {tab::Key("a"), S{"a"}, {0}},
      {KV{"a"}, S{"a"}, {0}},      {tab::Key("b"), std::nullopt, {}}, {KV{"b"}, std::nullopt, {}},
      {KV{}, S{}, {}}};
  struct IndexCase {
    Rows indices;
    std::optional<std::vector<std::int64_t>> rows;  // expected rows; nullopt: an error
    Err err;
  };
  std::vector<bool> mask13(10, false);
  mask13[1] = mask13[3] = true;
  const std::vector<IndexCase> index_cases = {
      {Rows(Slice()), std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Err::None},
      {Rows{3, -2}, std::vector<std::int64_t>{3, 8}, Err::None},
      {Rows{11, 1}, std::nullopt, Err::Index},
      {Rows(mask13), std::vector<std::int64_t>{1, 3}, Err::None},
      {Rows(std::vector<bool>(11, true)), std::nullopt, Err::Value},
      {Rows(Slice(3, std::nullopt, -2)), std::vector<std::int64_t>{3, 1}, Err::None},
      // PPE's [False, 3, 9, 5, True] is a list of integers (not all booleans).
      {Rows{0, 3, 9, 5, 1}, std::vector<std::int64_t>{0, 3, 9, 5, 1}, Err::None},
      {Rows(std::vector<std::int64_t>{}), std::vector<std::int64_t>{}, Err::None},
  };
  // get_examples' rows, with the positions they pick from the view's rows (by hand, Python semantics).
  struct GetCase {
    std::optional<Rows> rows;
    std::function<std::vector<std::int64_t>(const std::vector<std::int64_t>&)> pick;
    std::vector<std::int64_t> max_index;  // list indices (filtered when out of the view)
  };
  const auto first_two = [](const std::vector<std::int64_t>& l) {
    return std::vector<std::int64_t>(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2, l.size())));
  };
  const auto one_then_zero = [](const std::vector<std::int64_t>& l) {
    std::vector<std::int64_t> out;
    for (std::int64_t i = std::min<std::int64_t>(1, static_cast<std::int64_t>(l.size()) - 1); i >= 0; --i)
      out.push_back(l[static_cast<std::size_t>(i)]);
    return out;
  };
  const std::vector<GetCase> get_cases = {
      {std::nullopt, [](const auto& l) { return l; }, {}},
      {Rows{1}, [](const auto& l) { return std::vector<std::int64_t>{l[1]}; }, {1}},
      {Rows{1, 0}, [](const auto& l) { return std::vector<std::int64_t>{l[1], l[0]}; }, {1, 0}},
      {Rows(Slice(0, 2, 1)), first_two, {}},
      {Rows(Slice(1, std::nullopt, -1)), one_then_zero, {}},
      {Rows(std::vector<std::int64_t>{}), [](const auto&) { return std::vector<std::int64_t>{}; }, {}},
  };
  const std::vector<std::optional<std::vector<std::size_t>>> get_keys = {
      std::nullopt, std::vector<std::size_t>{1}, std::vector<std::size_t>{1, 0}, std::vector<std::size_t>{}};

  int cases = 0;
  for (const Mode mode : kModes)
    for (const auto& kc : mode == Mode::Unary ? unary_keys : tuple_keys)
      for (const bool return_array : {true, false})
        for (const auto& ic : index_cases)
          for (const auto& gc : get_cases)
            for (const auto& gk : get_keys) {
              // PPE's _filter_params.
              if (ic.rows && std::any_of(gc.max_index.begin(), gc.max_index.end(), [&](std::int64_t i) {
                    return i >= static_cast<std::int64_t>(ic.rows->size());
                  }))
                continue;
              if (kc.expected_keys && gk && std::any_of(gk->begin(), gk->end(), [&](std::size_t k) {
                    return k >= kc.expected_keys->size();
                  }))
                continue;
              const bool whole_rows = ic.indices == Rows(Slice()) && !gc.rows;
              if (!whole_rows && !(!kc.keys && !gk)) continue;
              ++cases;
              CAPTURE(tab::mode_name(mode));
              CAPTURE(return_array);
              CAPTURE(ic.indices);
              CAPTURE(gc.rows.value_or(Rows::all()));
              // The rows the dataset must receive: a list if any list is involved, else a slice.
              const bool list = ic.indices.kind() != Rows::Kind::Slice || (gc.rows && gc.rows->kind() == Rows::Kind::List);
              const bool keys_none = !kc.keys && !gk;
              auto ds = std::make_shared<DummyDataset>(DummyOptions{
                  .mode = mode,
                  .return_array = return_array,
                  .callback =
                      [&](const Rows& r, const tab::KeyIndices& k) {
                        CHECK(r.kind() == (list ? Rows::Kind::List : Rows::Kind::Slice));
                        CHECK(k.has_value() == !keys_none);
                      },
                  .convert = true});
              const auto make = [&] {
                if (!kc.keys) return ds->slice(ic.indices);
                if (const auto* one = std::get_if<tab::Key>(&*kc.keys)) return ds->slice(ic.indices, *one);
                return ds->slice(ic.indices, std::get<std::vector<tab::Key>>(*kc.keys));
              };
              if (ic.err == Err::Value) {
                CHECK_THROWS_AS(make(), std::invalid_argument);
                continue;
              }
              if (ic.err == Err::Index || !kc.expected_keys) {
                CHECK_THROWS_AS(make(), std::out_of_range);
                continue;
              }
              const auto view = make();
              CHECK(view->size() == static_cast<std::int64_t>(ic.rows->size()));
              CHECK(view->keys() == *kc.expected_keys);
              if (!kc.keys) CHECK(view->mode() == mode);
              else if (std::holds_alternative<std::vector<tab::Key>>(*kc.keys))
                CHECK(view->mode() == (mode == Mode::Unary ? Mode::Tuple : mode));
              else
                CHECK(view->mode() == Mode::Unary);

              const auto output = view->get_examples(gc.rows.value_or(Rows::all()), gk);
              at::Tensor data = select_rows(select_keys(ds->data, kc.key_positions), gc.pick(*ic.rows));
              if (gk) data = select_keys(data, *gk);
              check_columns(output, data, return_array);
              CHECK(is_converted(view->convert(as_columns(output))));
            }
  CHECK(cases == 462);  // PPE's 924 parameter sets, without its int/np.int32 dimension
}

TEST_CASE("tabular: an unknown key or position names it and the keys") {
  auto ds = std::make_shared<DummyDataset>();
  const std::string msg = ppe_test::error_of([&] { ds->slice(Rows(), {"a", "x"}); });
  CHECK(msg.find("'x'") != std::string::npos);
  CHECK(msg.find("('a', 'b', 'c')") != std::string::npos);
  CHECK(ppe_test::error_of([&] { ds->slice(Rows{10}); }).find("index 10 is out of bounds for dataset with size 10") !=
        std::string::npos);
  CHECK(ppe_test::error_of([&] { ds->get_example(0).get<std::string>("b"); }).find("'b'") != std::string::npos);
  CHECK_THROWS_AS(ds->get_example(0)["z"], std::out_of_range);
  // A dataset not owned by a shared_ptr cannot make views, and says how to fix it.
  DummyDataset local;
  CHECK(ppe_test::error_of([&] { local.astuple(); }).find("std::make_shared") != std::string::npos);
}

// ---- test_transform.py ----------------------------------------------------------------------------

namespace {

// a, b, c of an example in the dataset's mode (PPE: positional, keyword or one value).
std::array<double, 3> abc(const tab::Example& ex, Mode in_mode) {
  CHECK(ex.mode() == in_mode);
  if (in_mode == Mode::Unary) {
    CHECK(ex.size() == 1);
    const double a = ex.get<double>(0);
    return {a, a, a};
  }
  CHECK(ex.size() == 3);
  if (in_mode == Mode::Dict) return {ex.get<double>("a"), ex.get<double>("b"), ex.get<double>("c")};
  return {ex.get<double>(0), ex.get<double>(1), ex.get<double>(2)};
}
std::array<at::Tensor, 3> abc(const tab::Columns& cols, Mode in_mode) {
  CHECK(cols.mode() == in_mode);
  for (const auto& c : cols.values()) CHECK(c.is_array());
  if (in_mode == Mode::Unary) return {cols[0].array(), cols[0].array(), cols[0].array()};
  if (in_mode == Mode::Dict) return {cols["a"].array(), cols["b"].array(), cols["c"].array()};
  return {cols[0].array(), cols[1].array(), cols[2].array()};
}

// What PPE's transform / transform_alpha / transform_beta return, for out mode `Out`.
// `which`: 0 both, 1 alpha only, 2 beta only.
template <Mode Out, class X>
auto transform_result(const std::array<X, 3>& v, int which) {
  const auto& [a, b, c] = v;
  using V = std::conditional_t<std::is_same_v<X, double>, tab::Value, tab::Column>;
  using TupleT = std::conditional_t<std::is_same_v<X, double>, tab::Tuple, tab::ColumnTuple>;
  using DictT = std::conditional_t<std::is_same_v<X, double>, tab::Dict, tab::ColumnDict>;
  if constexpr (Out == Mode::Tuple) {
    if (which == 0) return TupleT{V(a + b), V(b + c)};
    return TupleT{which == 1 ? V(a + b) : V(b + c)};
  } else if constexpr (Out == Mode::Dict) {
    if (which == 0) return DictT{{"alpha", V(a + b)}, {"beta", V(b + c)}};
    return which == 1 ? DictT{{"alpha", V(a + b)}} : DictT{{"beta", V(b + c)}};
  } else {
    return V(a + b + c);
  }
}

// (Outside the template: GCC 12 crashes on these designated initializers inside one.)
std::shared_ptr<DummyDataset> transform_dummy(Mode in_mode) {
  return std::make_shared<DummyDataset>(DummyOptions{.mode = in_mode, .return_array = true, .convert = true});
}

// The PPE checks of a transformed view (not a template: they are the same for every result kind).
void check_transform_view(const tab::TabularPtr& view, const DummyDataset& ds, Mode in_mode, Mode out_mode, bool batch,
                          const std::optional<Rows>& indices, const tab::KeyIndices& key_indices) {
  const at::Tensor a = ds.data[0], b = in_mode == Mode::Unary ? a : ds.data[1],
                   c = in_mode == Mode::Unary ? a : ds.data[2];
  at::Tensor data = out_mode != Mode::Unary ? torch::stack({a + b, b + c}) : (a + b + c).unsqueeze(0);
  CHECK(view->size() == ds.size());
  CHECK(view->keys() == (out_mode != Mode::Unary ? std::vector<std::string>{"alpha", "beta"}
                                                 : std::vector<std::string>{"alpha"}));
  CHECK(view->mode() == out_mode);
  const auto output = view->get_examples(indices.value_or(Rows::all()), key_indices);
  if (indices) data = select_rows(data, DummyDataset::row_list(*indices, 10));
  if (key_indices) data = select_keys(data, *key_indices);
  REQUIRE(static_cast<std::int64_t>(output.size()) == data.size(0));
  for (std::size_t i = 0; i < output.size(); ++i) {
    CHECK(output[i].is_array() == batch);
    CHECK(torch::allclose(output[i].to_tensor(), data[static_cast<std::int64_t>(i)]));
  }
  CHECK(is_converted(view->convert(view->fetch())));
}

// PPE's d_transform for result kind `Out`, per example or per batch, on a dataset in `in_mode`.
template <Mode Out, bool Batch>
tab::TabularPtr make_transform_view(const std::shared_ptr<DummyDataset>& ds, Mode in_mode) {
  using T = std::conditional_t<Batch, tab::BatchTransformation, tab::Transformation>;
  using In = std::conditional_t<Batch, tab::Columns, tab::Example>;
  const auto fn = [in_mode](int which) {
    return [in_mode, which](const In& in) { return transform_result<Out>(abc(in, in_mode), which); };
  };
  const std::vector<tab::Key> in_keys = in_mode == Mode::Unary ? std::vector<tab::Key>{"a"}
                                                               : std::vector<tab::Key>{"a", "b", "c"};
  std::vector<std::string> keys;
  std::vector<T> transforms;
  if constexpr (Out != Mode::Unary) {
    keys = {"alpha", "beta"};
    if (in_mode != Mode::Unary) transforms.emplace_back(in_keys, keys, fn(0));
    else {
      transforms.emplace_back(in_keys, std::vector<std::string>{"alpha"}, fn(1));
      transforms.emplace_back(in_keys, std::vector<std::string>{"beta"}, fn(2));
    }
  } else {
    keys = {"alpha"};
    transforms.emplace_back(in_keys, keys, fn(0));
  }
  if constexpr (Batch) return ds->transform_batch(keys, transforms);
  else return ds->transform(keys, transforms);
}

template <Mode Out>
void transform_cases(Mode in_mode, const std::optional<Rows>& indices, const tab::KeyIndices& key_indices) {
  auto ds = transform_dummy(in_mode);
  check_transform_view(make_transform_view<Out, false>(ds, in_mode), *ds, in_mode, Out, false, indices, key_indices);
  check_transform_view(make_transform_view<Out, true>(ds, in_mode), *ds, in_mode, Out, true, indices, key_indices);
}

}  // namespace

TEST_CASE("tabular: transform and transform_batch (PPE test_transform table)") {
  const std::vector<std::optional<Rows>> index_table = {std::nullopt, Rows{1, 3}, Rows(Slice(std::nullopt, 2))};
  const std::vector<tab::KeyIndices> key_table = {std::nullopt, std::vector<std::size_t>{0},
                                                  std::vector<std::size_t>{1}, std::vector<std::size_t>{1, 0}};
  for (const Mode in_mode : kModes)
    for (const Mode out_mode : kModes)
      for (const auto& indices : index_table)
        for (const auto& key_indices : key_table) {
          if (out_mode == Mode::Unary && key_indices &&
              std::any_of(key_indices->begin(), key_indices->end(), [](std::size_t k) { return k >= 1; }))
            continue;
          CAPTURE(tab::mode_name(in_mode));
          CAPTURE(tab::mode_name(out_mode));
          CAPTURE(indices.value_or(Rows::all()));
          if (out_mode == Mode::Tuple) transform_cases<Mode::Tuple>(in_mode, indices, key_indices);
          if (out_mode == Mode::Dict) transform_cases<Mode::Dict>(in_mode, indices, key_indices);
          if (out_mode == Mode::Unary) transform_cases<Mode::Unary>(in_mode, indices, key_indices);
        }
}

TEST_CASE("tabular: invalid transforms (PPE TestTransformInvalid)") {
  auto ds = std::make_shared<DummyDataset>();
  // PPE finds an inconsistent result kind at run time; here the result type fixes the mode, which is
  // known before any example is transformed, and transformations of different kinds are refused.
  int calls = 0;
  auto view = ds->transform({"a"}, {{{"a", "b", "c"}, {"a"}, [&](const tab::Example& ex) {
                                      ++calls;
                                      return ex[0];
                                    }}});
  CHECK(view->mode() == Mode::Unary);
  CHECK(calls == 0);
  CHECK_THROWS_AS(ds->transform({"x", "y"}, {{{"a"}, {"x"}, [](const tab::Example& ex) { return ex[0]; }},
                                             {{"a"}, {"y"}, [](const tab::Example& ex) { return tab::Tuple{ex[0]}; }}}),
                  std::invalid_argument);
  // Outputs must be disjoint and exactly the keys.
  CHECK_THROWS_AS(ds->transform({"x"}, {{{"a"}, {"x"}, [](const tab::Example& ex) { return ex[0]; }},
                                        {{"b"}, {"x"}, [](const tab::Example& ex) { return ex[0]; }}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(ds->transform({"x", "y"}, {{{"a"}, {"x"}, [](const tab::Example& ex) { return ex[0]; }}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(ds->transform({"x"}, {{{"zz"}, {"x"}, [](const tab::Example& ex) { return ex[0]; }}}),
                  std::out_of_range);
  // A tuple of the wrong length, or a dict without an output, is reported when read.
  auto short_tuple = ds->transform({"x", "y"}, {{{"a"}, {"x", "y"}, [](const tab::Example& ex) {
                                                   return tab::Tuple{ex[0]};
                                                 }}});
  CHECK_THROWS_AS(short_tuple->fetch(), std::invalid_argument);
  auto bad_dict = ds->transform({"x"}, {{{"a"}, {"x"}, [](const tab::Example& ex) { return tab::Dict{{"y", ex[0]}}; }}});
  CHECK(ppe_test::error_of([&] { bad_dict->fetch(); }).find("'x'") != std::string::npos);

  // PPE test_transform_batch_length_changed, for the three result kinds.
  const auto longer = [](const tab::Columns& cols) {
    std::vector<tab::Value> v = cols[0].list();
    v.emplace_back(0.0);
    return tab::Column(std::move(v));
  };
  auto t1 = ds->transform_batch({"a"}, {{{"a", "b", "c"}, {"a"}, [&](const tab::Columns& c) {
                                          return tab::ColumnTuple{longer(c)};
                                        }}});
  auto t2 = ds->transform_batch({"a"}, {{{"a", "b", "c"}, {"a"}, [&](const tab::Columns& c) {
                                          return tab::ColumnDict{{"a", longer(c)}};
                                        }}});
  auto t3 = ds->transform_batch({"a"}, {{{"a", "b", "c"}, {"a"}, longer}});
  for (const auto& t : {t1, t2, t3}) {
    const std::string msg = ppe_test::error_of([&] { t->get_examples(Rows(), std::nullopt); });
    CHECK(msg.find("must not change the length") != std::string::npos);
  }
}

TEST_CASE("tabular: transform only runs the transformations of the requested keys") {
  auto ds = std::make_shared<DummyDataset>();
  int alpha = 0, beta = 0;
  auto view = ds->transform({"alpha", "beta"}, {{{"a"}, {"alpha"}, [&](const tab::Example& ex) {
                                                   ++alpha;
                                                   return ex.get<double>("a") * 2;
                                                 }},
                                                {{"b"}, {"beta"}, [&](const tab::Example& ex) {
                                                   ++beta;
                                                   return ex.get<double>("b") * 3;
                                                 }}});
  const auto out = view->slice(Rows(), {"beta"})->fetch();
  CHECK(alpha == 0);
  CHECK(beta == 10);
  CHECK(torch::allclose(out[0].to_tensor(), ds->data[1] * 3));
}

// ---- test_from_data.py ----------------------------------------------------------------------------

namespace {
const std::vector<std::int64_t> kList{2, 7, 1, 8, 4, 5, 9, 0, 3, 6};

// The unary fetch of rows 1 and 3: its values and whether it is a tensor column.
void check_unary_fetch(const tab::TabularPtr& ds, std::vector<std::int64_t> expected, bool array) {
  const auto out = ds->slice(Rows{1, 3})->fetch();
  CHECK(out.mode() == Mode::Unary);
  CHECK(out.value().is_array() == array);
  CHECK(torch::equal(out.value().to_tensor(), torch::tensor(expected, torch::kLong)));
}
void check_fetch(const tab::TabularPtr& ds, const std::vector<std::vector<std::int64_t>>& expected,
                 const std::vector<bool>& arrays) {
  const auto out = ds->slice(Rows{1, 3})->fetch();
  REQUIRE(out.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(out[i].is_array() == arrays[i]);
    CHECK(torch::equal(out[i].to_tensor(), torch::tensor(expected[i], torch::kLong)));
  }
}
const auto square = [](std::int64_t i) { return i * i; };
const auto negate = [](std::int64_t i) { return -i; };
}  // namespace

TEST_CASE("tabular: from_data with one piece (PPE TestFromData unary cases)") {
  const auto ten = tab::FromDataOptions().size(10);
  SUBCASE("array") {
    auto ds = tab::from_data(torch::arange(10));
    CHECK(ds->size() == 10);
    CHECK(ds->keys().size() == 1);
    check_unary_fetch(ds, {1, 3}, true);
  }
  SUBCASE("array with key") {
    auto ds = tab::from_data({"key_a", torch::arange(10)});
    CHECK(ds->keys() == std::vector<std::string>{"key_a"});
    CHECK(ds->mode() == Mode::Unary);
    check_unary_fetch(ds, {1, 3}, true);
  }
  SUBCASE("list") {
    auto ds = tab::from_data(kList);
    CHECK(ds->size() == 10);
    CHECK(ds->mode() == Mode::Unary);
    check_unary_fetch(ds, {7, 8}, false);
  }
  SUBCASE("list with key") {
    auto ds = tab::from_data({"key_a", kList});
    CHECK(ds->keys() == std::vector<std::string>{"key_a"});
    check_unary_fetch(ds, {7, 8}, false);
  }
  SUBCASE("callable, unary") {
    auto ds = tab::from_data({"key_a", square}, ten);
    CHECK(ds->size() == 10);
    CHECK(ds->keys() == std::vector<std::string>{"key_a"});
    CHECK(ds->mode() == Mode::Unary);
    check_unary_fetch(ds, {1, 9}, false);
  }
  SUBCASE("callable, tuple") {
    auto ds = tab::from_data({{"key_a", "key_b"}, [](std::int64_t i) { return tab::Tuple{i * i, -i}; }}, ten);
    CHECK(ds->keys() == std::vector<std::string>{"key_a", "key_b"});
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 9}, {-1, -3}}, {false, false});
  }
  SUBCASE("callable, dict") {
    auto ds = tab::from_data(
        {{"key_a", "key_b"}, [](std::int64_t i) { return tab::Dict{{"key_a", i * i}, {"key_b", -i}}; }}, ten);
    CHECK(ds->mode() == Mode::Dict);
    const auto out = ds->slice(Rows{1, 3})->fetch();
    CHECK(torch::equal(out["key_a"].to_tensor(), torch::tensor({1, 9}, torch::kLong)));
    CHECK(torch::equal(out["key_b"].to_tensor(), torch::tensor({-1, -3}, torch::kLong)));
  }
  SUBCASE("callable without key or size") {
    // PPE raises ValueError for a callable without a key; here it does not compile.
    static_assert(!std::is_constructible_v<tab::Data, decltype(square)>);
    const std::string msg = ppe_test::error_of([&] { tab::from_data({"key_a", square}); });
    CHECK(msg.find("size must be specified") != std::string::npos);
  }
}

TEST_CASE("tabular: from_data with a tuple of pieces (PPE TestFromData tuple cases)") {
  SUBCASE("array, list") {
    auto ds = tab::from_data({torch::arange(10), kList});
    CHECK(ds->size() == 10);
    CHECK(ds->keys().size() == 2);
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 3}, {7, 8}}, {true, false});
  }
  SUBCASE("array with key, list") {
    auto ds = tab::from_data({{"key_a", torch::arange(10)}, kList});
    CHECK(ds->keys()[0] == "key_a");
    check_fetch(ds, {{1, 3}, {7, 8}}, {true, false});
  }
  SUBCASE("array, list with key") {
    auto ds = tab::from_data({torch::arange(10), {"key_b", kList}});
    CHECK(ds->keys()[1] == "key_b");
    check_fetch(ds, {{1, 3}, {7, 8}}, {true, false});
  }
  SUBCASE("array, callable unary") {
    auto ds = tab::from_data({torch::arange(10), {"key_b", square}});
    CHECK(ds->keys()[1] == "key_b");
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 3}, {1, 9}}, {true, false});
  }
  SUBCASE("array, callable tuple") {
    auto ds = tab::from_data(
        {torch::arange(10), {{"key_b", "key_c"}, [](std::int64_t i) { return tab::Tuple{i * i, -i}; }}});
    CHECK(ds->keys().size() == 3);
    CHECK(ds->keys()[1] == "key_b");
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 3}, {1, 9}, {-1, -3}}, {true, false, false});
  }
  SUBCASE("array, callable dict") {
    auto ds = tab::from_data({torch::arange(10), {{"key_b", "key_c"}, [](std::int64_t i) {
                                                    return tab::Dict{{"key_b", i * i}, {"key_c", -i}};
                                                  }}});
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 3}, {1, 9}, {-1, -3}}, {true, false, false});
  }
  SUBCASE("array with key, callable unary") {
    auto ds = tab::from_data({{"key_a", torch::arange(10)}, {"key_b", square}});
    CHECK(ds->keys() == std::vector<std::string>{"key_a", "key_b"});
    check_fetch(ds, {{1, 3}, {1, 9}}, {true, false});
  }
  SUBCASE("callable, callable") {
    auto ds = tab::from_data({{"key_a", square}, {"key_b", negate}}, tab::FromDataOptions().size(10));
    CHECK(ds->keys() == std::vector<std::string>{"key_a", "key_b"});
    CHECK(ds->mode() == Mode::Tuple);
    check_fetch(ds, {{1, 9}, {-1, -3}}, {false, false});
    CHECK_THROWS_AS(tab::from_data({{"key_a", square}, {"key_b", negate}}), std::invalid_argument);
  }
}

TEST_CASE("tabular: from_data with a dict of pieces (PPE TestFromData dict cases)") {
  const auto dict = tab::FromDataOptions().mode(Mode::Dict);
  SUBCASE("array, list") {
    auto ds = tab::from_data({{"key_a", torch::arange(10)}, {"key_b", kList}}, dict);
    CHECK(ds->keys() == std::vector<std::string>{"key_a", "key_b"});
    CHECK(ds->mode() == Mode::Dict);
    const auto out = ds->slice(Rows{1, 3})->fetch();
    CHECK(out["key_a"].is_array());
    CHECK(!out["key_b"].is_array());
    CHECK(torch::equal(out["key_b"].to_tensor(), torch::tensor({7, 8}, torch::kLong)));
  }
  SUBCASE("array, callables") {
    auto ds = tab::from_data({{"key_a", torch::arange(10)},
                              {"key_b", square},
                              {{"key_c", "key_d"}, [](std::int64_t i) { return tab::Tuple{i * i, -i}; }},
                              {{"key_e", "key_f"}, [](std::int64_t i) { return tab::Dict{{"key_e", i}, {"key_f", -i}}; }}},
                             dict);
    CHECK(ds->mode() == Mode::Dict);
    check_fetch(ds, {{1, 3}, {1, 9}, {1, 9}, {-1, -3}, {1, 3}, {-1, -3}}, {true, false, false, false, false, false});
  }
  SUBCASE("callables need a size") {
    auto ds = tab::from_data({{"key_a", square}, {"key_b", negate}}, tab::FromDataOptions().size(10).mode(Mode::Dict));
    check_fetch(ds, {{1, 9}, {-1, -3}}, {false, false});
    CHECK_THROWS_AS(tab::from_data({{"key_a", square}, {"key_b", negate}}, dict), std::invalid_argument);
  }
  SUBCASE("every piece needs a key") {
    CHECK_THROWS_AS(tab::from_data({{"key_a", torch::arange(10)}, torch::arange(10)}, dict), std::invalid_argument);
  }
}

TEST_CASE("tabular: from_data generates unique keys (PPE test_unique)") {
  auto a = tab::from_data(torch::arange(10));
  auto b = tab::from_data(torch::arange(10));
  CHECK(a != b);
  CHECK(a->keys() != b->keys());
}

// ---- test_with_torch_dataloader.py and the C++ integrations ---------------------------------------

TEST_CASE("tabular: with LibTorch's data loader (PPE test_with_torch_dataloader)") {
  for (const Mode mode : {Mode::Dict, Mode::Tuple})
    for (const std::size_t batch_size : {1, 2, 8})
      for (const std::size_t workers : {0, 2}) {
        CAPTURE(tab::mode_name(mode));
        CAPTURE(batch_size);
        CAPTURE(workers);
        auto ds = std::make_shared<DummyDataset>(DummyOptions{.mode = mode});
        auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
            tab::CollatedTorchDataset(ds), torch::data::DataLoaderOptions(batch_size).workers(workers));
        std::int64_t i = 0;
        for (const tab::Batch& batch : *loader) {
          CHECK(batch.mode() == mode);
          const auto start = i * static_cast<std::int64_t>(batch_size);
          const auto stop = std::min<std::int64_t>(start + static_cast<std::int64_t>(batch_size), 10);
          for (std::size_t k = 0; k < 3; ++k) {
            const at::Tensor expected = ds->data[static_cast<std::int64_t>(k)].slice(0, start, stop);
            const at::Tensor& got = mode == Mode::Dict ? batch[ds->keys()[k]] : batch[k];
            CHECK((got.scalar_type() == torch::kDouble));
            CHECK(torch::allclose(got, expected));
          }
          ++i;
        }
        CHECK(i == (10 + static_cast<std::int64_t>(batch_size) - 1) / static_cast<std::int64_t>(batch_size));
      }
}

TEST_CASE("tabular: TorchDataset yields examples; .map(collate) and get_batch read once per batch") {
  int calls = 0;
  auto ds = std::make_shared<DummyDataset>(
      DummyOptions{.mode = Mode::Dict, .callback = [&](const Rows&, const tab::KeyIndices&) { ++calls; }});
  tab::TorchDataset examples(ds);
  CHECK(examples.size().value() == 10);
  const std::vector<tab::Example> batch = examples.get_batch(std::vector<std::size_t>{4, 2});
  CHECK(calls == 1);
  REQUIRE(batch.size() == 2);
  CHECK(batch[1].get<double>("c") == ds->data[2][2].item<double>());
  const tab::Batch collated = tab::collate(batch);
  CHECK(torch::equal(collated["a"], torch::stack({ds->data[0][4], ds->data[0][2]})));

  auto mapped = examples.map(torch::data::transforms::BatchLambda<std::vector<tab::Example>, tab::Batch>(tab::collate));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(mapped), 4);
  std::int64_t rows = 0;
  for (const tab::Batch& b : *loader) rows += b["b"].size(0);
  CHECK(rows == 10);
  // Strings cannot be collated; the message names the key.
  auto strings = tab::from_data({"s", std::vector<std::string>{"x", "y"}});
  const std::string msg = ppe_test::error_of([&] { tab::CollatedTorchDataset(strings).get_batch(std::vector<std::size_t>{0}); });
  CHECK(msg.find("'s'") != std::string::npos);
}

TEST_CASE("tabular: a dataset is a range-v3 random-access range of examples") {
  auto ds = tab::from_data({{"i", torch::arange(6)}, {"sq", square}});
  const tab::TabularDataset& d = *ds;
  static_assert(ranges::random_access_range<const tab::TabularDataset&>);
  static_assert(ranges::sized_range<const tab::TabularDataset&>);
  static_assert(std::ranges::random_access_range<const tab::TabularDataset&>);
  const std::vector<std::int64_t> even_squares =
      d | ranges::views::filter([](const tab::Example& ex) { return ex.get<std::int64_t>("i") % 2 == 0; }) |
      ranges::views::transform([](const tab::Example& ex) { return ex.get<std::int64_t>("sq"); }) |
      ranges::to<std::vector>();
  CHECK(even_squares == std::vector<std::int64_t>{0, 4, 16});
  CHECK((d.begin()[5]).get<std::int64_t>(1) == 25);
  CHECK(d.end() - d.begin() == 6);
}

}  // namespace ppe_test_dataset_tests_tabular_tests_test_tabular_dataset
