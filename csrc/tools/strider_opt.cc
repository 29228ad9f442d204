// strider-opt: reads IR text, runs named passes, prints the result (drives the text tests).
//   strider-opt --passes=build_storage_table,build_dependence_dag [file.ir | -]
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "transforms/passes.h"

int main(int argc, char** argv) {
  std::vector<std::string> passes;
  std::string path = "-";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) {
      std::stringstream list(a.substr(9));
      for (std::string p; std::getline(list, p, ',');)
        if (!p.empty()) passes.push_back(p);
    } else {
      path = a;
    }
  }
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream f(path);
    if (!f) {
      std::cerr << "strider-opt: cannot read " << path << "\n";
      return 2;
    }
    text << f.rdbuf();
  }
  try {
    std::cout << strider::run_passes(text.str(), passes);
  } catch (const std::exception& e) {
    std::cerr << "strider-opt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
