import os

from hypothesis import HealthCheck, settings

# "ci" (the default) replays the same examples on every run; "dev" explores new ones, as many as
# HYPOTHESIS_EXAMPLES says (default 2000). Pick with HYPOTHESIS_PROFILE=dev.
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "2000")), deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
# "device": the first 50 of ci's examples, for the suite's run on the emulated CUDA device
# (tests/python/test_cuda_device.py), where compiling each kernel for the host takes most of it
settings.register_profile("device", parent=settings.get_profile("ci"), max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
