// RULE: a method mapping this->data[0:n] attaches the device copy of the member pointer; the host member pointer is unchanged afterwards
// EXPECT: data=1,11,21 ptr=host
#include <cstdio>

class Buffer {
public:
  int n;
  int *data;
  Buffer(int *d, int m) : n(m), data(d) {}
  void bump() {
#pragma omp target map(to: this->n) map(tofrom: this->data[0:n])
    for (int i = 0; i < n; i++) data[i] += 10 * i;
  }
};

int main() {
  int store[3] = {1, 1, 1};
  Buffer b(store, 3);
  b.bump();
  bool host = b.data == store;
  std::printf("data=%d,%d,%d ptr=%s\n", store[0], store[1], store[2], host ? "host" : "changed");
  return !(store[0] == 1 && store[1] == 11 && store[2] == 21 && host);
}
