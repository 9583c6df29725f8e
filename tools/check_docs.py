import sys; print("check_docs: TODO")
