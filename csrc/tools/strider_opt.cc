// strider-opt: reads IR text, runs the named steps of the pipeline's table (driver/lower.cc),
// prints the result (drives the text tests); an unknown name lists the known ones.
//   strider-opt --passes=build_storage_table,build_dependence_dag [--schedule=N:primitives]...
//               [--target=cpu|cuda] [file.ir | -]
#include <fstream>
#include <iostream>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "driver/driver.h"

int main(int argc, char** argv) {
  std::vector<std::string> passes;
  std::map<int, std::string> schedules;
  strider::Target target = strider::Target::Cpu;
  std::string path = "-";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) {
      std::stringstream list(a.substr(9));
      for (std::string p; std::getline(list, p, ',');)
        if (!p.empty()) passes.push_back(p);
    } else if (a == "--target=cpu" || a == "--target=cuda") {
      target = a == "--target=cpu" ? strider::Target::Cpu : strider::Target::Cuda;
    } else if (a.rfind("--schedule=", 0) == 0) {
      size_t colon = a.find(':');
      if (colon == std::string::npos) {
        std::cerr << "strider-opt: --schedule=N:primitives\n";
        return 2;
      }
      schedules[std::stoi(a.substr(11, colon - 11))] = a.substr(colon + 1);
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
    std::cout << strider::run_passes(text.str(), passes, schedules, target);
  } catch (const std::exception& e) {
    std::cerr << "strider-opt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
