#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "runtime/cuda_loader.h"

// The dlopen layer: a missing or foreign library is a one-sentence reason, never a crash; where
// NVRTC is installed it compiles to a cubin and reports its log on errors.
namespace strider {
namespace {

#define SKIP_WITHOUT_NVRTC() \
  if (!Nvrtc::get()) GTEST_SKIP() << nvrtc_unavailable_reason()

TEST(CudaLoader, MissingDriverIsAReason) {
  EXPECT_EQ(cuda_unavailable_reason("libcuda-missing.so.1"), "no NVIDIA driver (libcuda-missing.so.1 not found)");
}

TEST(CudaLoader, ForeignDriverLibraryNamesTheMissingEntryPoint) {
  EXPECT_EQ(cuda_unavailable_reason("libc.so.6"), "the NVIDIA driver libc.so.6 lacks cuInit");
}

TEST(CudaLoader, MissingNvrtcListsWhatWasTried) {
  std::string why;
  EXPECT_EQ(Nvrtc::load({"libnvrtc-missing.so", "/nowhere/libnvrtc.so.13"}, &why), nullptr);
  EXPECT_EQ(why, "NVRTC not found (tried libnvrtc-missing.so, /nowhere/libnvrtc.so.13)");
}

TEST(CudaLoader, ForeignNvrtcLibraryIsUnusable) {
  std::string why;
  EXPECT_EQ(Nvrtc::load({"libc.so.6"}, &why), nullptr);
  EXPECT_EQ(why, "NVRTC unusable: libc.so.6 lacks nvrtcGetErrorString");
}

TEST(CudaLoader, CandidatesPreferVersionedNamesUnderCudaHome) {
  const std::vector<std::string> names = nvrtc_candidates();
  ASSERT_FALSE(names.empty());
  EXPECT_NE(std::find(names.begin(), names.end(), "/usr/local/cuda/lib64/libnvrtc.so.13"), names.end());
  EXPECT_EQ(names.back(), "libnvrtc.so");
}

TEST(CudaLoader, ProcessReasonIsOneSentenceOrADeviceIsThere) {
  const std::string why = cuda_unavailable_reason();
  if (why.empty()) {
    EXPECT_EQ(cuda_device_arch().rfind("sm_", 0), 0u);
  } else {
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_EQ(cuda_device_arch(), "");
  }
}

TEST(CudaLoader, NvrtcCompilesToCubinForEachArch) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_NE(Nvrtc::get()->version().find('.'), std::string::npos);
  const std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::string cubin = Nvrtc::get()->compile_cubin(src, "k.cu", arch, {"-std=c++17"});
    ASSERT_GT(cubin.size(), 4u) << arch;
    EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF") << arch;
  }
}

TEST(CudaLoader, NvrtcErrorCarriesTheLog) {
  SKIP_WITHOUT_NVRTC();
  try {
    Nvrtc::get()->compile_cubin("extern \"C\" __global__ void k() { undeclared_thing(); }\n", "bad.cu", "sm_80", {});
    FAIL() << "compiled";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("could not compile bad.cu for sm_80"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace strider
