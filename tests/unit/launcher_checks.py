# SPDX-License-Identifier: GPL-2.0-or-later
#
# What the launcher's unit tests share: the launcher's package,
# scripts/rnic_launch, importable from tests/unit, where meson runs them,
# and from anywhere else.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts"))
