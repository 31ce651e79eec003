// RULE: a struct wrapping a fixed array (std::array-like) with operator[] is mapped whole and indexed on the device
// EXPECT: size=8 arr[0]=100 arr[7]=149
#include <cstddef>
#include <cstdio>

template <typename T, std::size_t N> struct Array {
  T elems[N];
  T &operator[](std::size_t i) { return elems[i]; }
  const T &operator[](std::size_t i) const { return elems[i]; }
  constexpr std::size_t size() const { return N; }
};

int main() {
  Array<int, 8> arr;
  for (std::size_t i = 0; i < arr.size(); i++) arr[i] = static_cast<int>(i);
#pragma omp target map(tofrom: arr)
  for (std::size_t i = 0; i < arr.size(); i++) arr[i] = arr[i] * arr[i] + 100;
  std::printf("size=%zu arr[0]=%d arr[7]=%d\n", arr.size(), arr[0], arr[7]);
  for (std::size_t i = 0; i < arr.size(); i++) if (arr[i] != static_cast<int>(i * i + 100)) return 1;
  return 0;
}
