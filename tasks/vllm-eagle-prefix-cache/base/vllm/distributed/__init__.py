# SPDX-License-Identifier: Apache-2.0

from .communication_op import *
from .parallel_state import *
from .utils import *
