"""The cloud clusters an InferenceCluster provisions, as managed resources of each cloud's provider.

One module per cloud turns plain values into the managed resources of that cloud's
Crossplane provider; helpers two or more clouds share live in their own modules.
"""
