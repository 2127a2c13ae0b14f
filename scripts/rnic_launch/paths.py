# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the repository and its cache (.cache, or $RNIC_CACHE) are."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("RNIC_CACHE", os.path.join(ROOT, ".cache"))


def rel(path):
    path = os.path.abspath(path)
    if path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return path
