// TensorRef's stride, contiguity and byte-range queries (the dispatch path's
// allocation-free forms) against their definitions from effective_strides().
#include "kdajit/tensor_ref.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace kda;

namespace {

std::uintptr_t end_by_definition(const TensorRef& t) {
  if (t.numel() == 0) {
    return t.begin_address();
  }
  const std::vector<std::int64_t> s = t.effective_strides();
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    last += (t.shape[i] - 1) * s[i];
  }
  return t.begin_address() + static_cast<std::uintptr_t>((last + 1) * element_size(t.dtype));
}

bool contiguous_by_definition(const TensorRef& t) {
  const std::vector<std::int64_t> want = t.contiguous_strides();
  const std::vector<std::int64_t> have = t.effective_strides();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (t.shape[i] > 1 && have[i] != want[i]) {
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("tensor ref: stride, is_contiguous and end_address agree with effective_strides", "[runtime][tensor_ref]") {
  std::mt19937_64 rng(Catch::rngSeed());
  std::uniform_int_distribution<int> rank_of(1, 4);
  std::uniform_int_distribution<std::int64_t> size_of(0, 5);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int trial = 0; trial < 2000; ++trial) {
    TensorRef t = TensorRef::contiguous(reinterpret_cast<const void*>(0x7000'0000'0000ull + 256 * trial),
                                        trial % 2 ? ElementType::bf16 : ElementType::fp32, {});
    const int rank = rank_of(rng);
    for (int i = 0; i < rank; ++i) {
      t.shape.push_back(size_of(rng));
    }
    if (coin(rng) != 0) {
      // given strides: row-major, or perturbed in one dimension
      t.strides = t.contiguous_strides();
      if (coin(rng) == 0) {
        t.strides[static_cast<std::size_t>(trial % rank)] += 1 + coin(rng);
      }
    }
    const std::vector<std::int64_t> s = t.effective_strides();
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      REQUIRE(t.stride(d) == s[d]);
    }
    REQUIRE(t.is_contiguous() == contiguous_by_definition(t));
    REQUIRE(t.end_address() == end_by_definition(t));
  }
}

TEST_CASE("tensor ref: strides of the wrong rank are not contiguous", "[runtime][tensor_ref]") {
  TensorRef t = TensorRef::contiguous(reinterpret_cast<const void*>(0x1000), ElementType::bf16, {2, 3});
  t.strides = {3};
  REQUIRE_FALSE(t.is_contiguous());
  t.strides = {3, 1};
  REQUIRE(t.is_contiguous());
  t.strides = {100, 1}; // padded rows
  REQUIRE_FALSE(t.is_contiguous());
  REQUIRE(t.end_address() == 0x1000 + (100 + 2 + 1) * 2);
  TensorRef one_row = TensorRef::contiguous(reinterpret_cast<const void*>(0x1000), ElementType::bf16, {1, 3});
  one_row.strides = {7, 1}; // a size-1 dimension may have any stride
  REQUIRE(one_row.is_contiguous());
}
