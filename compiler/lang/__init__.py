"""The tensor-expression language, below its schedules: tensors and the operations that
make them (tensor.py), reducers (reduce.py), intrinsics (intrin.py). Users reach these
names through compiler.te, the floor above compiler/schedule that adds create_schedule.
"""
