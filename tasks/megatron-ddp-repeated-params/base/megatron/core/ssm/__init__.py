# Copyright (c) 2025, NVIDIA CORPORATION.  All rights reserved.
