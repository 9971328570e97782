"""What julia/parametric adds: type parameters in the program."""

from machine import define_rubric

rubric = define_rubric(
    {
        "type_parameters": {
            "description": (
                "The program it ran last declares type parameters in code (not in comments or strings): "
                "a where-clause on a method (`f(x::AbstractVector{T}) where {T<:Number}`) or a parametric "
                "struct or abstract type (`struct Point{T<:Real}`)."
            ),
            "weight": 1,
        },
    }
)
