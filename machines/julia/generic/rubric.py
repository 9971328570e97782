"""What julia/generic adds: functions that accept any suitable type, shown on several."""

from machine import define_rubric

rubric = define_rubric(
    {
        "no_concrete_arguments": {
            "description": (
                "The program it ran last defines at least one function with arguments, and no function "
                "argument (keyword arguments and anonymous functions included) is declared with a "
                "concrete type from Base: not `::Int`, `::Float64`, `::String` and the like, not a "
                "concrete container such as `::Vector` or `::Dict` whatever its parameters, and not an "
                "abstract type pinned to a concrete parameter such as `::AbstractVector{Int}`; nor is a "
                "type parameter bounded by one (`where T<:Float64`). Untyped arguments, abstract types "
                "(`Number`, `Real`, `AbstractString`, `AbstractVector{<:Real}`), type parameters, "
                "`Nothing` or `Missing`, `Type{...}` and the program's own types are all fine."
            ),
            "weight": 1,
        },
        "shown_on_several_types": {
            "description": (
                "The program runs its functions on several different input types (for example Int, "
                "Float64, Rational or BigFloat, a range and a Vector, a Tuple or a String, as fits the "
                "task), and the run_julia output shows a correct result for each."
            ),
            "weight": 1,
        },
    }
)
