import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs torch with a CUDA GPU")
    config.addinivalue_line("markers", "fla: compares with FLA (fla-core), whose Triton kernels compile first")
